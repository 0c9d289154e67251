// `trainwatch job [ID]`: the merged view of a job from the shared directory every node's
// daemon publishes to (cluster/peer_record.h), with no daemon needed. With no ID, the jobs
// there; with one, every node's incidents of it in time order, the first failing node and
// rank, the verdict and suspects, and each node's bundle. Times are each node's own clock:
// where two nodes' first incidents lie within the skew allowance, either may have come first,
// and it says so.
#pragma once

#include <chrono>
#include <ostream>
#include <string>

namespace trainwatch::cli {

struct JobOptions {
  std::string config_path;  // empty: the default config
  std::string shared_dir;   // overrides the config's cluster.shared_dir
  std::string id;           // the job id (as the incidents name it); empty: list the jobs
  bool json = false;
};

int RunJob(const JobOptions& options, std::ostream& out, std::ostream& err);

}  // namespace trainwatch::cli
