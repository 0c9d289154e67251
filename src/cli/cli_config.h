// The daemon config as the CLI verbs that need it (status, snapshot, bundles) read it: the one
// named with --config or the default one, its problems printed as file:line:col. Command-line
// use; single thread.
#pragma once

#include <ostream>
#include <string>

#include "config/daemon_config.h"
#include "core/result.h"

namespace trainwatch::cli {

// `config_path` empty: config::ConfigPath's default. Prints every problem on `err`.
Result<config::DaemonConfig> LoadCliConfig(const std::string& config_path, std::ostream& err);

}  // namespace trainwatch::cli
