// BlockedThreads: which threads of the watched processes have sat in uninterruptible sleep
// (D) without being switched out once, for long enough to be stuck rather than busy. A thread
// doing I/O, however heavy, is woken at each completed request, so its switch count moves
// between looks and its wait starts again; one on a dead NFS or FUSE server, or in a wedged
// driver, is never woken. Told once per episode and process (the main thread when it is one
// of them, else the longest stuck); an episode ends when no thread of the process is stuck.
// Pure: the caller gives the looks and the time. One thread at a time.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "collect/blocked_call.h"
#include "core/env.h"

namespace trainwatch::collect {

class BlockedThreads {
 public:
  struct Stuck {
    pid_t pid = 0;
    pid_t tid = 0;
    std::chrono::milliseconds blocked{0};  // since it was first seen in this wait
  };

  explicit BlockedThreads(std::chrono::milliseconds after) : after_(after) {}
  void set_after(std::chrono::milliseconds after) { after_ = after; }
  std::chrono::milliseconds after() const { return after_; }

  // One look at the threads of `pid` at `now`: the thread to tell of, the first time one of
  // them has been stuck `after` long in this episode.
  std::optional<Stuck> Observe(pid_t pid, const std::vector<ThreadProgress>& threads,
                               SteadyTime now);
  // Forgets the processes not in `pids` (ended, or no longer watched).
  void KeepOnly(const std::set<pid_t>& pids);
  std::size_t size() const { return processes_.size(); }

 private:
  struct Wait {
    std::uint64_t switches = 0;
    SteadyTime since{};
  };
  struct Process {
    std::map<pid_t, Wait> waits;  // by thread, those in D now
    bool told = false;
  };

  std::chrono::milliseconds after_;
  std::map<pid_t, Process> processes_;
};

}  // namespace trainwatch::collect
