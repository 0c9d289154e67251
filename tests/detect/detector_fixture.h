// Test helper: a LineDetector over rules given as YAML text, fed a whole string.
#pragma once

#include <gtest/gtest.h>

#include "detect/line_detector.h"
#include "rules/rule_loader.h"
#include "support/framing.h"

namespace trainwatch::detect {

inline constexpr const char* kTracebackRule = R"(
  - id: python.traceback
    kind: crash
    tags: [train]
    description: Uncaught Python exception
    pattern: 'Traceback \(most recent call last\):'
    multiline: python-traceback
    examples: {fires: [x], quiet: [y]}
)";

// The shipped rule's shape: the header, and where a header-less traceback shows itself (a
// frame, or the final line of a fatal exception class).
inline constexpr const char* kExcerptTracebackRule = R"(
  - id: python.traceback
    kind: crash
    tags: [train]
    description: Uncaught Python exception, header or not
    pattern: 'Traceback \(most recent call last\):|File "[^"]*", line \d+, in |\b(?:\w+\.)*(?:DistBackendError|ProcessRaisedException|MemoryError)(?:: |:?$)'
    multiline: python-traceback
    examples: {fires: [x], quiet: [y]}
)";

// Runs `text` through a detector built from `rules_yaml` (entries of a `rules:` list) and
// returns every event, including those flushed at end of input.
inline std::vector<Event> Detect(const std::string& rules_yaml, const std::string& text,
                                 std::size_t max_line = source::kDefaultMaxLineBytes,
                                 TimePoint now = TimePoint()) {
  rules::LoadedRules loaded;
  rules::LoadRuleText("rules:\n" + rules_yaml, "test.yaml", loaded);
  EXPECT_TRUE(loaded.errors.empty()) << FormatDiagnostic(loaded.errors.front());
  auto compiled = rules::CompiledRules::Build(loaded.rules, {"train"}, nullptr);
  auto matcher = rules::LineMatcher::Create(*compiled);
  LineDetector detector(std::move(*matcher));
  std::vector<Event> events;
  testing::ForEachBatch(
      text, [&](const source::LineBatch& batch) { detector.OnBatch(batch, now, events); },
      max_line);
  detector.Finish(events);
  return events;
}

}  // namespace trainwatch::detect
