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

// Whether a sample's key (collect::WaitKey) is a wait for peers: a futex (a collective's
// wait for its worker thread), a socket read, an epoll.
bool IsPeerWait(const std::string& key);

}  // namespace trainwatch::diagnose
