#include "collect/blocked_threads.h"

namespace trainwatch::collect {

std::optional<BlockedThreads::Stuck> BlockedThreads::Observe(
    pid_t pid, const std::vector<ThreadProgress>& threads, SteadyTime now) {
  Process& process = processes_[pid];
  std::map<pid_t, Wait> waits;
  for (const ThreadProgress& thread : threads) {
    if (thread.state != 'D') {
      continue;
    }
    auto was = process.waits.find(thread.tid);
    if (was != process.waits.end() && was->second.switches == thread.switches) {
      waits.emplace(thread.tid, was->second);  // the same wait, never woken since
    } else {
      waits.emplace(thread.tid, Wait{thread.switches, now});
    }
  }
  process.waits = std::move(waits);
  std::optional<Stuck> chosen;
  for (const auto& [tid, wait] : process.waits) {
    const auto blocked = std::chrono::duration_cast<std::chrono::milliseconds>(now - wait.since);
    if (blocked < after_) {
      continue;
    }
    if (!chosen || tid == pid || (chosen->tid != pid && blocked > chosen->blocked)) {
      chosen = Stuck{pid, tid, blocked};
    }
  }
  if (!chosen) {
    process.told = false;
    return std::nullopt;
  }
  if (process.told) {
    return std::nullopt;
  }
  process.told = true;
  return chosen;
}

void BlockedThreads::KeepOnly(const std::set<pid_t>& pids) {
  std::erase_if(processes_, [&](const auto& entry) { return !pids.contains(entry.first); });
}

}  // namespace trainwatch::collect
