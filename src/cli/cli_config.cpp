#include "cli/cli_config.h"

#include "config/shipped_paths.h"

namespace trainwatch::cli {

Result<config::DaemonConfig> LoadCliConfig(const std::string& config_path, std::ostream& err) {
  config::ConfigLoad load =
      config::LoadDaemonConfig(config::ConfigPath(config_path), config::ProcessEnv());
  if (!load.config) {
    for (const Diagnostic& error : load.errors) {
      err << FormatDiagnostic(error) << "\n";
    }
    return Error{"the config has errors"};
  }
  return std::move(*load.config);
}

}  // namespace trainwatch::cli
