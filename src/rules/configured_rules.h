// Everything a daemon config file brings: the config itself and the rules it names (or the
// shipped packs), loaded together so that the daemon, a reload and `check --config` judge a
// config the same way. Plain function; any thread.
#pragma once

#include <string>
#include <vector>

#include "config/daemon_config.h"
#include "core/result.h"
#include "rules/rule.h"

namespace trainwatch::rules {

struct ConfiguredRules {
  config::DaemonConfig config;
  std::vector<Rule> rules;
};

// Fails with every problem of the config and its rule files, one "file:line:col: message"
// per line.
Result<ConfiguredRules> LoadConfiguredRules(const std::string& config_path);

}  // namespace trainwatch::rules
