// `trainwatch snapshot` with no daemon (or with --out): one capture run here and now, with
// the config's collectors, on a loop of its own. Replaces gather_info_docker.py inside a
// container and, with --container, gather_info_host.py on the host.
#pragma once

#include <ostream>

#include "cli/control_commands.h"
#include "config/daemon_config.h"

namespace trainwatch::cli {

// Exit 0 with the bundle's path on `out`; 1 when no bundle could be written (why on `err`).
int RunStandaloneSnapshot(const config::DaemonConfig& config, const ControlOptions& options,
                          std::ostream& out, std::ostream& err);

}  // namespace trainwatch::cli
