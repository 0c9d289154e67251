// BlockedWatch: every few seconds, on the thread pool, looks at the threads of the watched
// jobs' processes (the ProcessRoster's living ones) and writes a line for each process that has
// a thread stuck in the kernel (BlockedThreads): which rank, how long, and the call it is
// blocked in (collect::FormatBlockedCall). A `processes: true` source reads those lines and its
// rules (rules/blocked.yaml) say what they mean: a dead network file system, a wedged driver.
// A look reads a small /proc file per thread, a few more for one in D. A look that has not
// ended holds the next one back (a /proc read of a process in trouble may itself be slow), so
// the loop never waits on one; past kLookDeadline it no longer does: the next look starts
// afresh (the stuck one keeps its own state) and the stall is counted. Loop thread only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collect/blocked_call.h"
#include "collect/blocked_threads.h"
#include "core/env.h"

namespace trainwatch::watch {

struct WatchedProcess {
  pid_t pid = 0;
  std::uint64_t start_ticks = 0;  // 0: not checked
  std::string comm;
  std::optional<int> rank;
};

// "[rank3]: trainwatch: python3 (pid 4242) has been blocked in the kernel for 30 s, never
// woken: read(fd 7: /mnt/ckpt/x.pt, on fuse.sshfs at /mnt/ckpt) in request_wait_answer".
// `thread_comm` names a thread other than the main one. Printable.
std::string BlockedLine(const WatchedProcess& process, const collect::BlockedThreads::Stuck& stuck,
                        const std::string& thread_comm, const collect::BlockedCall& call);

class BlockedWatch {
 public:
  static constexpr std::chrono::seconds kEvery{2};
  static constexpr std::chrono::seconds kLookDeadline{60};

  // A line, and the process it is about.
  struct Report {
    pid_t pid = 0;
    std::string line;
  };
  using Emit = std::function<void(const std::vector<Report>& reports)>;
  BlockedWatch(Env& env, Emit emit);
  ~BlockedWatch();
  BlockedWatch(const BlockedWatch&) = delete;
  BlockedWatch& operator=(const BlockedWatch&) = delete;

  void set_after(std::chrono::milliseconds after) { after_ = after; }
  // Whether Tick would look now (a look is kEvery old and has ended, or is past its deadline).
  bool Due(SteadyTime now) const {
    return looks_ == 0 || now - last_look_ > kLookDeadline ||
           (!looking_ && now - last_look_ >= kEvery);
  }
  // Looks at `processes` when Due.
  void Tick(SteadyTime now, std::vector<WatchedProcess> processes);
  bool looking() const { return looking_; }
  std::uint64_t looks() const { return looks_; }
  // Looks that had not ended by kLookDeadline.
  std::uint64_t stalled_looks() const { return stalled_looks_; }
  // No process is watched any more (a reload removed the `processes` sources).
  void ClearStall() { stalled_since_.reset(); }
  // How long its looks have not ended, counted from the start of the first look that ran past
  // kLookDeadline, until a look ends (the watcher's health: while so, it is blind); nullopt
  // while they answer.
  std::optional<std::chrono::seconds> StalledFor(SteadyTime now) const {
    if (!stalled_since_) {
      return std::nullopt;
    }
    return std::chrono::duration_cast<std::chrono::seconds>(now - *stalled_since_);
  }

 private:
  Env& env_;
  Emit emit_;
  std::chrono::milliseconds after_{30000};
  // Touched by one look at a time, on the pool (the loop hands it over and takes it back
  // through RunOnPool's work and done).
  std::shared_ptr<collect::BlockedThreads> threads_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  bool looking_ = false;
  SteadyTime last_look_{};
  std::uint64_t looks_ = 0;
  std::uint64_t stalled_looks_ = 0;
  std::optional<SteadyTime> stalled_since_;
  std::uint64_t generation_ = 0;  // of the look under way: a stalled one's end is ignored
};

}  // namespace trainwatch::watch
