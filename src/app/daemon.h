// Daemon: `trainwatch daemon` and `trainwatch wrap`. Wires the stages on one libuv loop:
// sources (TailSet per file source, KmsgReader, a WrappedChild) feed Streams, whose firings
// and the time-based detectors (progress stalls, silence, writers that vanish, the wrapped
// child's exit) go to the IncidentBuilder; settled incidents are appended to
// incidents.jsonl. Persists tail positions, reloads on SIGHUP, stops cleanly on
// SIGTERM/SIGINT, talks sd_notify and serves the control socket. Loop thread only.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace trainwatch::app {

struct DaemonOptions {
  std::string config_path;        // empty: the default config (see DefaultConfigPath)
  std::vector<std::string> wrap;  // `trainwatch wrap -- CMD...`: the command; empty otherwise
  std::string kmsg_device = "/dev/kmsg";
};

// The config used when none is given: $TRAINWATCH_CONFIG, else /etc/trainwatch/trainwatch.yaml
// when it exists, else the one shipped with this build or installation.
std::string DefaultConfigPath();

// Runs until SIGTERM/SIGINT (daemon) or the child's end (wrap). Returns the process exit
// status: 0 after a clean stop, 2 when the config or rules are unusable at start, the
// child's status for wrap.
int RunDaemon(const DaemonOptions& options);

// `trainwatch check --config FILE`: validates the config and the rules it names; prints
// problems as file:line:col. Returns 0 or 2.
int CheckConfig(const std::string& config_path);

}  // namespace trainwatch::app
