// `trainwatch slurm-epilog`: for slurm.conf's Epilog, run by slurmd on each node as a job
// ends. Waits, bounded, for the daemon to record and capture the job's failure here (an
// incident of SLURM_JOB_ID, and its bundle), prints what it found, and exits non-zero only
// when the verdict blames the node (exclude_node or reboot_node, not the job's own failure):
// Slurm then drains the node ("Epilog error"), so that no next job lands on it. A job that
// ended well, or failed by its own fault, leaves the node up. Command-line use; single thread.
#pragma once

#include <chrono>
#include <functional>
#include <ostream>
#include <string>

namespace trainwatch::cli {

struct SlurmEpilogOptions {
  std::string config_path;   // empty: the default config
  std::string job;           // empty: $SLURM_JOB_ID
  std::string wait = "60s";  // at most, for the job's incident to be recorded and captured
  // How long to look for an incident at all: the daemon records one within its settle time of
  // the failing line, which may come right at the job's end.
  std::string settle = "5s";
  // The clock it waits by and its pause between looks, given at the edge (daemon/main.cpp):
  // the OS's, or a test's.
  std::function<std::chrono::steady_clock::time_point()> steady_now;
  std::function<void(std::chrono::milliseconds)> pause;
};

// 0: the node is not at fault (or nothing was found); 1: it is; 2: a usage or config error.
int RunSlurmEpilog(const SlurmEpilogOptions& options, std::ostream& out, std::ostream& err);

}  // namespace trainwatch::cli
