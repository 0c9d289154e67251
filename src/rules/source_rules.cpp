#include "rules/source_rules.h"

#include <algorithm>
#include <variant>

namespace trainwatch::rules {

Result<SourceRules> BuildSourceRules(const std::vector<Rule>& rules,
                                     const std::vector<std::string>& tags,
                                     const std::string& source_name, const std::string& cache_dir,
                                     std::vector<Diagnostic>& notes) {
  Result<std::shared_ptr<const CompiledRules>> compiled =
      CompiledRules::Build(rules, tags, &notes, cache_dir);
  if (!compiled) {
    return Error{"source " + source_name + ": " + compiled.error().message};
  }
  SourceRules sorted;
  sorted.lines = std::move(*compiled);
  for (const Rule& rule : rules) {
    if (std::none_of(tags.begin(), tags.end(),
                     [&](const std::string& tag) { return rule.HasTag(tag); })) {
      continue;
    }
    if (std::holds_alternative<ProgressDetector>(rule.detector)) {
      sorted.progress.push_back(rule);
    } else if (std::holds_alternative<SilenceDetector>(rule.detector)) {
      sorted.silence.push_back(rule);
    } else if (std::holds_alternative<ExitDetector>(rule.detector)) {
      sorted.exit.push_back(rule);
    }
  }
  return sorted;
}

}  // namespace trainwatch::rules
