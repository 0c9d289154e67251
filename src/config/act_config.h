// The sections of the daemon config that act on a verdict: `retry` (the retry policy's
// thresholds, ops/retry_policy.h) and `slurm` (what is done in the scheduler, slurm/). Value
// types; any thread.
//
//   retry:
//     same_failure_budget: 3    # cancel_retries at the 3rd attempt in a row failing the same
//                               # way without getting further (0: never; at most 100)
//     first_failure_budget: 3   # exclude_node when this node failed first in 3 attempts in a
//                               # row (0: never)
//     storm_attempts: 5         # restart_storm at 5 attempts failing within storm_window (0:
//                               # never)
//     storm_window: 30m         # 1m..7d
//   slurm:
//     drain: false              # drain this node (scontrol update ... state=drain) for an
//                               # exclude_node or reboot_node verdict; never for the job's own
//                               # failures
//     node_name: gpu-17         # the node's Slurm name; default: the daemon's SLURMD_NODENAME,
//                               # else cluster.node_name, else the short hostname
//     timeout: 10s              # each scontrol call at most (1s..2m)
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>

#include "config/yaml_reader.h"
#include "core/quantity.h"

namespace trainwatch::config {

// The retry policy's thresholds (ops/retry_policy.h). 0 turns a decision off.
struct RetryConfig {
  // cancel_retries once this many attempts in a row failed the same way, none getting further.
  std::uint32_t same_failure_budget = 3;
  // exclude_node once this node failed first in this many attempts in a row.
  std::uint32_t first_failure_budget = 3;
  // restart_storm once this many attempts failed within storm_window.
  std::uint32_t storm_attempts = 5;
  Duration storm_window{30LL * 60 * 1000};
};

struct SlurmConfig {
  bool drain = false;
  std::string node_name;  // empty: SLURMD_NODENAME, cluster.node_name, the short hostname
  Duration timeout{10000};
  std::string slurmd_nodename_env;  // the daemon's $SLURMD_NODENAME when loaded
};

void ParseRetry(const YAML::Node& node, YamlReader& yaml, RetryConfig& out);
void ParseSlurm(const YAML::Node& node, YamlReader& yaml, SlurmConfig& out);

}  // namespace trainwatch::config
