#include "cli/config_check.h"

#include <algorithm>
#include <cstdio>
#include <variant>

#include "collect/redactor.h"
#include "diagnose/stack_rules.h"
#include "detect/example_checker.h"
#include "rules/compiled_rules.h"
#include "rules/configured_rules.h"
#include "rules/source_rules.h"

namespace trainwatch::cli {

int RunCheckConfig(const std::string& config_path) {
  Result<rules::ConfiguredRules> setup = rules::LoadConfiguredRules(config_path);
  if (!setup) {
    std::fputs(setup.error().message.c_str(), stderr);
    return 2;
  }
  std::vector<Diagnostic> notes;
  for (const config::SourceConfig& source : setup->config.sources) {
    Result<std::shared_ptr<const rules::CompiledRules>> compiled =
        rules::CompiledRules::Build(setup->rules, source.tags, &notes);
    if (!compiled) {
      std::fprintf(stderr, "%s: source %s: %s\n", config_path.c_str(), source.name.c_str(),
                   compiled.error().message.c_str());
      return 2;
    }
    rules::SourceRules sorted;
    for (const rules::Rule& rule : setup->rules) {
      if (std::any_of(source.tags.begin(), source.tags.end(),
                      [&](const std::string& tag) { return rule.HasTag(tag); })) {
        if (std::holds_alternative<rules::ProgressDetector>(rule.detector)) {
          sorted.progress.push_back(rule);
        } else if (std::holds_alternative<rules::SilenceDetector>(rule.detector)) {
          sorted.silence.push_back(rule);
        }
      }
    }
    // Warnings: the config works, but not as its author likely meant.
    for (const Diagnostic& warning : rules::SilenceWithinGrace(sorted, source.name)) {
      std::fprintf(stderr, "%s\n", FormatDiagnostic(warning).c_str());
    }
  }
  // The rules' own examples are their tests (after the compile, whose errors say more): a
  // rule whose examples do not behave is refused here as the daemon's reload refuses it.
  std::vector<Diagnostic> example_notes;
  std::vector<Diagnostic> problems = detect::CheckExamples(setup->rules, &example_notes);
  diagnose::CheckStackExamples(setup->rules, problems);
  if (!problems.empty()) {
    for (const Diagnostic& problem : problems) {
      std::fprintf(stderr, "%s\n", FormatDiagnostic(problem).c_str());
    }
    std::fprintf(stderr, "%s: %zu rule example%s did not behave\n", config_path.c_str(),
                 problems.size(), problems.size() == 1 ? "" : "s");
    return 2;
  }
  Result<std::shared_ptr<const collect::Redactor>> redactor = collect::Redactor::Create(
      {setup->config.capture.redact_names, setup->config.capture.redact_patterns});
  if (!redactor) {
    std::fprintf(stderr, "%s: capture redact: %s\n", config_path.c_str(),
                 redactor.error().message.c_str());
    return 2;
  }
  std::printf("%s: ok: %zu sources, %zu rules, state in %s\n", config_path.c_str(),
              setup->config.sources.size(), setup->rules.size(), setup->config.state_dir.c_str());
  return 0;
}

}  // namespace trainwatch::cli
