// `trainwatch check --config FILE`: validates a daemon config and everything it names — the
// rules (loaded and compiled for each source's tags) and the redaction patterns — without
// starting anything. Command-line use; single thread.
#pragma once

#include <string>

namespace trainwatch::cli {

// Prints every problem as file:line:col on stderr and returns 2; else a one-line summary on
// stdout and 0.
int RunCheckConfig(const std::string& config_path);

}  // namespace trainwatch::cli
