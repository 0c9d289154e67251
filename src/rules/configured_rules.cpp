#include "rules/configured_rules.h"

#include "config/shipped_paths.h"
#include "rules/rule_loader.h"

namespace trainwatch::rules {

Result<ConfiguredRules> LoadConfiguredRules(const std::string& config_path) {
  config::ConfigLoad load = config::LoadDaemonConfig(config_path, config::ProcessEnv());
  std::string problems;
  for (const Diagnostic& error : load.errors) {
    problems += FormatDiagnostic(error) + "\n";
  }
  if (!load.config) {
    return Error{problems};
  }
  ConfiguredRules loaded{std::move(*load.config), {}};
  const std::vector<std::string> rule_paths =
      loaded.config.rule_paths.empty() ? config::DefaultRulePaths() : loaded.config.rule_paths;
  LoadedRules rules = LoadRulePaths(rule_paths);
  for (const Diagnostic& error : rules.errors) {
    problems += FormatDiagnostic(error) + "\n";
  }
  if (!problems.empty()) {
    return Error{problems};
  }
  loaded.rules = std::move(rules.rules);
  return loaded;
}

}  // namespace trainwatch::rules
