// JobBook: what a node keeps of the jobs it runs, across nodes. When it last captured for each
// job (one capture per job failure: a peer's incident of a job this node captured for within
// the cooldown needs none, and its records need not be read), and the records it published or
// read (the report's view of the job: at most kMaxRecords of each of kMaxJobs jobs). Value
// type; loop thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cluster/peer_record.h"
#include "core/env.h"
#include "core/quantity.h"

namespace trainwatch::cluster {

class JobBook {
 public:
  static constexpr std::size_t kMaxRecords = 64;
  static constexpr std::size_t kMaxJobs = 8;

  void set_cooldown(Duration cooldown) { cooldown_ = cooldown; }
  // This node opened an incident of `job` that captured its ranks at `at` (own or peer).
  void Captured(const std::string& job, SteadyTime at);
  // An incident of `job` resolved here: the job's next failure is a new one to capture for.
  void Resolved(const std::string& job) { captured_.erase(job); }
  // How long ago this node captured for `job`, if within the cooldown.
  std::optional<Duration> CapturedAgo(const std::string& job, SteadyTime now) const;

  void Remember(const PeerRecord& record);
  // The records of `job`, oldest first.
  std::vector<PeerRecord> RecordsOf(const std::string& job) const;

 private:
  Duration cooldown_{300000};
  std::map<std::string, SteadyTime> captured_;
  std::map<std::string, std::map<std::string, PeerRecord>> records_;  // by job, by file name
};

}  // namespace trainwatch::cluster
