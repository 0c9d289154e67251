// The command-line verbs, as functions of their options and output streams so tests can
// run them in-process. Each returns the process exit status.
#pragma once

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

#include "cli/event_format.h"
#include "config/daemon_config.h"

namespace trainwatch::cli {

// `trainwatch check`: load rule files, run their examples; every problem as
// "file:line:col: message", exit 2; else a one-line summary, exit 0.
struct CheckOptions {
  std::vector<std::string> rule_paths;  // empty: the shipped packs
};
int RunCheck(const CheckOptions& options, std::ostream& out, std::ostream& err);

// `trainwatch scan`: run the rules over files as if tailed from a source with `tags`, print
// each firing line, then the incidents the daemon would have opened from them
// (incident/incident_replay.h). Exit 0 when no crash, hang or device rule fired; 1 when one
// did; 2 on an error.
struct ScanOptions {
  std::vector<std::string> rule_paths;        // empty: the shipped packs
  std::vector<std::string> tags = {"train"};  // the tags of the source the files stand for
  EventFormat format = EventFormat::kText;
  std::vector<std::string> files;  // "-" is standard input
  // How the daemon would group the firings into incidents (settle, cooldown, follow_up): the
  // defaults, or those of the config at `config_path` when one is named.
  config::IncidentConfig incident;
  std::string config_path;
  // When the scan runs (the caller's clock): a firing in a file that gives no time for its
  // lines is taken as of then, and glog times are read in its year.
  std::chrono::system_clock::time_point now{};
};
int RunScan(const ScanOptions& options, std::ostream& out, std::ostream& err);

inline constexpr int kExitClean = 0;
inline constexpr int kExitFired = 1;
inline constexpr int kExitError = 2;

}  // namespace trainwatch::cli
