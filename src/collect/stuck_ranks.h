// Ranks stuck in the kernel: the processes of any job here (a rank variable in their
// environment, collect/rank_identity.h) with a thread in uninterruptible sleep (D) at every
// one of several samples and never switched out between them (collect/blocked_threads.h, the
// process watch's test: heavy I/O sits in D too, but is woken at each request) — a wedged device or
// a dead file system holds them there, and nothing but a reboot frees them. For the node verdict
// (ops/node_verdict.h). Blocking (it sleeps between samples); command-line use, any thread.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace trainwatch::collect {

// A rank found in uninterruptible sleep at every sample.
struct StuckRank {
  int pid = 0;
  std::string label;  // "rank 3"
  std::string wchan;
  double seconds = 0;  // over which it was seen stuck
};

struct StuckScan {
  std::size_t ranks = 0;  // rank processes seen
  std::vector<StuckRank> stuck;
};

// Samples every rank process in `proc_root` now, and those in D state again `samples - 1`
// times, `every` apart (`sleep` waits; tests step it). Fails when `proc_root` cannot be listed.
Result<StuckScan> FindStuckRanks(const std::string& proc_root, int samples,
                                 std::chrono::milliseconds every,
                                 const std::function<void(std::chrono::milliseconds)>& sleep);

}  // namespace trainwatch::collect
