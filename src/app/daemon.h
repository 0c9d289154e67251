// Daemon: `trainwatch daemon` and `trainwatch wrap`. Wires the stages on one libuv loop:
// Sources (files, the kernel log, a wrapped command) feed their detectors, whose firings go to
// the IncidentFlow (incident/: record, capture, tell the sinks listed in daemon_sinks.cpp);
// the daemon owns the loop, the config and its reload on SIGHUP, the saved offsets, the
// control socket, sd_notify and the metrics textfile, and stops cleanly on SIGTERM/SIGINT.
// Loop thread only.
#pragma once

#include <string>
#include <vector>

namespace trainwatch::app {

struct DaemonOptions {
  std::string config_path;        // empty: the default config (config::ConfigPath)
  std::vector<std::string> wrap;  // `trainwatch wrap -- CMD...`: the command; empty otherwise
  std::string kmsg_device = "/dev/kmsg";
  // The soft RLIMIT_NOFILE the daemon runs under: logs are held open within what it leaves
  // (source::DescriptorBudget). 0: no budget of its own.
  unsigned long long open_file_limit = 0;
  // Compiled rule databases are kept in state_dir/cache, so later starts load them instead of
  // compiling. A test on the fake file system keeps none.
  bool cache_compiled_rules = true;
  // wrap: "own" exits with the command's status; "verdict" maps a failure's verdict to
  // ops/verdict_exit_code.h's statuses.
  std::string exit_codes = "own";
};

// Runs until SIGTERM/SIGINT (daemon) or the child's end (wrap). Returns the process exit
// status: 0 after a clean stop, 2 when the config or rules are unusable at start, the
// child's status for wrap.
int RunDaemon(const DaemonOptions& options);

}  // namespace trainwatch::app
