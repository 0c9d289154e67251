// Where the shipped rule packs are when the operator names none: next to an installed
// binary (<prefix>/share/trainwatch/rules), else the source tree the binary was built from.
#pragma once

#include <string>
#include <vector>

namespace trainwatch::app {

// The default --rules paths; empty when neither place exists (the caller says so).
std::vector<std::string> DefaultRulePaths();

// The daemon config shipped with this build: <prefix>/share/trainwatch/trainwatch.yaml next to
// an installed binary, else daemon/trainwatch.yaml of the source tree.
std::string ShippedConfigPath();

}  // namespace trainwatch::app
