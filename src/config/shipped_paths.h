// Where the shipped files are when the operator names none: the rule packs and the daemon
// config next to an installed binary (<prefix>/share/trainwatch/), else in the source tree the
// binary was built from; and which config the daemon and the CLI use by default.
#pragma once

#include <string>
#include <vector>

namespace trainwatch::config {

// The default --rules paths; empty when neither place exists (the caller says so).
std::vector<std::string> DefaultRulePaths();

// The daemon config shipped with this build: <prefix>/share/trainwatch/trainwatch.yaml next to
// an installed binary, else daemon/trainwatch.yaml of the source tree.
std::string ShippedConfigPath();

// The folder of the Python hook (sitecustomize.py): <prefix>/share/trainwatch/python next to
// an installed binary, else daemon/python of the source tree.
std::string ShippedPythonHookDir();

// Where a command without a state_dir (`scan`) keeps its compiled rules between runs:
// $XDG_CACHE_HOME/trainwatch, else ~/.cache/trainwatch; empty without either variable.
// Compiling the shipped packs was 70% of a scan's 0.18 s start-up.
std::string UserCacheDir();

// The config to use: `given` (--config) when not empty; else $TRAINWATCH_CONFIG, else
// /etc/trainwatch/trainwatch.yaml when it exists, else the one shipped with this build or
// installation.
std::string ConfigPath(const std::string& given);

}  // namespace trainwatch::config
