#include "app/watched_source.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <variant>

namespace trainwatch::app {

void WatchedSource::SwapRules() {
  ForEachStream([&](detect::StreamDetector& stream, source::TailedFile*) {
    if (Status swapped = stream.SetRules(line_rules); !swapped) {
      spdlog::error("source {}: {}: {}", config.name, stream.identity().name,
                    swapped.error().message);
    }
  });
}

Result<std::unique_ptr<WatchedSource>> MakeWatchedSource(const config::SourceConfig& config,
                                                         const std::vector<rules::Rule>& rules,
                                                         const std::string& cache_dir,
                                                         std::vector<Diagnostic>& notes) {
  auto source = std::make_unique<WatchedSource>();
  source->config = config;
  Result<std::shared_ptr<const rules::CompiledRules>> compiled =
      rules::CompiledRules::Build(rules, config.tags, &notes, cache_dir);
  if (!compiled) {
    return Error{"source " + config.name + ": " + compiled.error().message};
  }
  source->line_rules = std::move(*compiled);
  for (const rules::Rule& rule : rules) {
    if (std::none_of(config.tags.begin(), config.tags.end(),
                     [&](const std::string& tag) { return rule.HasTag(tag); })) {
      continue;
    }
    if (std::holds_alternative<rules::ProgressDetector>(rule.detector)) {
      source->progress_rules.push_back(rule);
    } else if (std::holds_alternative<rules::SilenceDetector>(rule.detector)) {
      source->silence_rules.push_back(rule);
    } else if (std::holds_alternative<rules::ExitDetector>(rule.detector)) {
      source->exit_rules.push_back(rule);
    }
  }
  return source;
}

}  // namespace trainwatch::app
