#include "rules/source_rules.h"

#include <algorithm>
#include <variant>

#include "core/quantity.h"

namespace trainwatch::rules {

std::vector<Diagnostic> SilenceWithinGrace(const SourceRules& rules,
                                           const std::string& source_name) {
  std::vector<Diagnostic> warnings;
  for (const Rule& silence : rules.silence) {
    const Duration after = std::get<SilenceDetector>(silence.detector).after;
    for (const Rule& progress : rules.progress) {
      const Duration grace = std::get<ProgressDetector>(progress.detector).startup_grace;
      if (after >= grace) {
        continue;
      }
      std::string message = "warning: source ";
      message += source_name;
      message += ": silence rule ";
      message += silence.id;
      message += " fires after ";
      message += FormatDuration(after);
      message += ", before the ";
      message += FormatDuration(grace);
      message += " startup_grace of progress rule ";
      message += progress.id;
      message +=
          ": a job silent that long at start-up (graph compilation, a bar at 0%) is "
          "reported as a hang; make the silence at least as long as the grace";
      warnings.push_back(Diagnostic{silence.where, std::move(message)});
      break;  // one warning per silence rule
    }
  }
  return warnings;
}

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
    } else if (std::holds_alternative<PaceDetector>(rule.detector)) {
      sorted.pace.push_back(rule);
    } else if (std::holds_alternative<SilenceDetector>(rule.detector)) {
      sorted.silence.push_back(rule);
    } else if (std::holds_alternative<ExitDetector>(rule.detector)) {
      sorted.exit.push_back(rule);
    }
  }
  for (Diagnostic& warning : SilenceWithinGrace(sorted, source_name)) {
    notes.push_back(std::move(warning));
  }
  return sorted;
}

}  // namespace trainwatch::rules
