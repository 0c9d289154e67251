// `trainwatch node-verdict`: is this node fit for the next job? The node's incidents, the
// retry policy's exclusions and quick checks made now (the device tools answer, no rank stuck
// in the kernel) judged by ops/node_verdict.h: PASS, WARNING, CRITICAL or UNKNOWN, as text or
// JSON, with exit status 0, 1, 2 or 3 — for a Slurm Prolog or HealthCheckProgram, or a
// Kubernetes init container. No daemon needed. Command-line use; single thread.
#pragma once

#include <chrono>
#include <ostream>
#include <string>

namespace trainwatch::cli {

struct NodeVerdictOptions {
  std::string config_path;  // empty: the default config
  bool json = false;
  // Each device tool's deadline ("10s"); one past it is killed and the node is CRITICAL.
  std::string timeout = "10s";
  bool skip_devices = false;  // no device tool is run
  std::string proc_root = "/proc";
  std::chrono::system_clock::time_point now;  // read at the edge (daemon/main.cpp)
};

// The exit status is the verdict's (0 PASS, 1 WARNING, 2 CRITICAL, 3 UNKNOWN); 4 for a usage
// or config error.
int RunNodeVerdict(const NodeVerdictOptions& options, std::ostream& out, std::ostream& err);

}  // namespace trainwatch::cli
