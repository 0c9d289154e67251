// Test helper: a WatchedSource named "train" (tag train, paths /logs/*.log) over rules given
// as YAML text, and an Outlet that drops what it is told, for tests that only look at the
// source afterwards.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "detect/watched_source.h"
#include "rules/rule_loader.h"

namespace trainwatch::detect {

inline std::unique_ptr<WatchedSource> TrainSource(const char* rules_yaml) {
  rules::LoadedRules loaded;
  rules::LoadRuleText(rules_yaml, "t.yaml", loaded);
  EXPECT_TRUE(loaded.errors.empty()) << FormatDiagnostic(loaded.errors.front());
  std::vector<Diagnostic> notes;
  Result<rules::SourceRules> built =
      rules::BuildSourceRules(loaded.rules, {"train"}, "train", "", notes);
  EXPECT_TRUE(built.ok());
  config::SourceConfig config;
  config.name = "train";
  config.tags = {"train"};
  config.paths = {"/logs/*.log"};
  return std::make_unique<WatchedSource>(config, std::move(*built));
}

inline WatchedSource::Outlet QuietOutlet() {
  WatchedSource::Outlet outlet;
  outlet.fired = [](std::vector<Firing>&, StreamDetector*) {};
  outlet.writer_closed = [] {};
  outlet.crash_caught = [](StreamDetector&) {};
  outlet.new_file = [] {};
  outlet.unknown_writers = [] {};
  outlet.traceback_open = [] {};
  outlet.read = [] {};
  outlet.suppress_fired = [](StreamDetector&, const source::FileTail&) {};
  return outlet;
}

}  // namespace trainwatch::detect
