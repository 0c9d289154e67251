// The straggler of a job that runs on, slower: the rank that waits for its peers least. In a
// synchronous job every rank ends each step together, so the fast ranks spend the difference
// waiting inside the collective (a futex, a socket) while the slow one computes, sleeps in
// its data loader or sits throttled. Sampled without stopping anyone (collect/wait_state.h),
// the rank whose share of that wait stands apart from every peer's is named, with the shares.
// Pure; any thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace trainwatch::diagnose {

struct RankState;  // diagnose/suspects.h

struct WaitStraggler {
  std::size_t index = 0;  // into the ranks given
  std::string reason;     // "waits for its peers least (futex_do_wait in 12% of 60 samples; ..."
};

// Needs two live ranks or more with kMinWaitSamples each; nullopt when no rank stands apart.
std::optional<WaitStraggler> StragglerByWaits(const std::vector<RankState>& ranks);

inline constexpr int kMinWaitSamples = 10;

// One node's ranks' wait samples, summed: what a node publishes with a slow incident's record
// (or a peer capture's for one), so that the job's nodes can be compared (SlowNode). In a
// synchronous job the nodes that wait for their peers a share of each step are not the slow
// one; a whole node throttled (its CPUs, its devices' clocks) waits least.
struct NodeWaits {
  int samples = 0;     // of every rank sampled there
  int peer_waits = 0;  // of those, in a wait for peers (IsPeerWait)
  int ranks = 0;
};

// The sums of the ranks' samples (`waits` as RankState holds them, of live ranks only); nullopt
// when no rank has kMinWaitSamples.
std::optional<NodeWaits> SumWaits(const std::vector<std::map<std::string, int>>& ranks);

struct SlowNode {
  std::size_t index = 0;  // into the nodes given
  std::string reason;     // "its ranks wait for their peers least (3% of 300 samples; ..."
};

// The node whose ranks wait for their peers least, standing apart from every other node as a
// straggler rank does from its peers (StragglerByWaits' thresholds); needs two nodes or more
// with kMinWaitSamples each. `names` are the nodes', for the reason.
std::optional<SlowNode> SlowNodeByWaits(const std::vector<NodeWaits>& nodes,
                                        const std::vector<std::string>& names);

// Whether a sample's key (collect::WaitKey) is a wait for peers: a futex (a collective's
// wait for its worker thread), a socket read, an epoll.
bool IsPeerWait(const std::string& key);

}  // namespace trainwatch::diagnose
