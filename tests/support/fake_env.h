// FakeEnv: the Env for unit tests. Time stands still until the test advances it; timers fire in
// order as it passes; file changes on its FakeFileSystem reach directory watches and file
// polls only when the test lets the loop run (RunUntilIdle), one turn after they happen as
// with inotify; children are scripted — the test decides what they print, when they exit and
// whether a signal kills them; thread-pool work runs on the test thread, or waits while the
// pool is held. Nothing sleeps and nothing touches the machine but /proc reads below
// proc_root. Test thread only.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/env.h"
#include "support/fake_file_system.h"

namespace trainwatch::testing {

class FakeEnv final : public Env {
 public:
  // A scripted child process.
  struct Child {
    SpawnOptions options;
    int pid = 0;
    bool alive = true;         // the process exists (ProcessExists)
    bool listened_to = true;   // its ChildProcess still exists
    std::vector<int> signals;  // received, in order
    int open_pipes = 2;
    ChildEvents events;
  };

  explicit FakeEnv(std::string proc_root = "/proc");
  ~FakeEnv() override;

  FakeFileSystem& files() { return files_; }

  // Moves both clocks forward by `by`, firing every timer that falls due in order (each at its
  // own time) and letting the loop run after each.
  void Advance(std::chrono::milliseconds by);
  // Runs the loop until nothing is left to do now: file events, idle work, pool work.
  void RunUntilIdle();

  // The last process holding `path` open for writing closed it (or died): IN_CLOSE_WRITE,
  // seen by directory watches on the next turn.
  void CloseWrite(const std::string& path);

  // Children: in spawn order.
  std::vector<std::shared_ptr<Child>>& children() { return children_; }
  void Output(Child& child, std::string_view text, bool is_stderr = false);
  // Both pipes closed (or one).
  void EndOutput(Child& child);
  // The process ends: with `term_signal` when a signal killed it. Its pipes close too unless
  // `keep_pipes` (a grandchild still holds them).
  void Exit(Child& child, std::int64_t status, int term_signal = 0, bool keep_pipes = false);
  // Programs Spawn reports as not installed.
  std::set<std::string> not_installed;
  // When true, a child dies of SIGTERM or SIGKILL as soon as it gets one; when false it ignores
  // both (a process in uninterruptible sleep) and the test ends it.
  bool signals_kill = true;
  // Other processes that exist, for ProcessExists.
  std::set<int> live_pids;
  // Signals sent to pids that are not children of the test's (pid, signal), in order; SIGKILL
  // also ends such a pid in live_pids.
  std::vector<std::pair<int, int>> other_signals;

  // While held, pool work waits (a collector that takes its time); ReleasePool runs it.
  void HoldPool() { pool_held_ = true; }
  void ReleasePool();
  // Runs the first waiting pool work and its completion, held or not (one step of a chain:
  // a lookup on the pool before the slow work it leads to).
  void StepPool();
  std::size_t pool_waiting() const { return pool_.size(); }

  std::set<std::string> watched_dirs() const;
  std::set<std::string> polled_files() const;
  std::size_t active_timers() const;

  SteadyTime SteadyNow() const override { return steady_; }
  WallTime WallNow() const override { return wall_; }
  std::unique_ptr<LoopTimer> NewTimer(std::function<void()> on_fire) override;
  std::unique_ptr<LoopIdle> NewIdle(std::function<void()> on_turn) override;
  void RunOnPool(std::function<void()> work, std::function<void()> done) override;
  const FileSystem& fs() const override { return files_; }
  Result<std::unique_ptr<ChangeWatch>> WatchDirectory(const std::string& dir,
                                                      DirChange on_change) override;
  Result<std::unique_ptr<ChangeWatch>> PollFile(const std::string& path,
                                                std::chrono::milliseconds interval,
                                                std::function<void(bool gone)> on_change) override;
  Result<std::unique_ptr<ChildProcess>> Spawn(const SpawnOptions& options,
                                              ChildEvents events) override;
  void Signal(int pid, int signal) override;
  bool ProcessExists(int pid) override;
  const std::string& proc_root() const override { return proc_root_; }

  // Internal bookkeeping, shared with the handles it gives out.
  struct TimerState {
    std::function<void()> fire;
    bool active = false;
    SteadyTime due;
    std::chrono::milliseconds repeat{0};
    std::uint64_t order = 0;  // start order: ties fire first-started first
  };
  struct IdleState {
    std::function<void()> turn;
    bool active = false;
  };
  struct WatchState {
    std::string dir;
    DirChange on_change;
  };

 private:
  struct PoolTask {
    std::function<void()> work;
    std::function<void()> done;
  };
  bool RunOneTurn();
  void FireDueTimers(SteadyTime until);

  FakeFileSystem files_;
  std::string proc_root_;
  SteadyTime steady_;
  WallTime wall_;
  std::uint64_t next_order_ = 0;
  std::vector<std::weak_ptr<TimerState>> timers_;
  std::vector<std::weak_ptr<IdleState>> idles_;
  std::vector<std::weak_ptr<WatchState>> watches_;
  std::map<std::string, std::weak_ptr<TimerState>> polls_;  // path → its poll timer
  std::deque<std::tuple<std::string, std::string, DirEvent>> file_events_;
  std::deque<PoolTask> pool_;
  std::deque<std::function<void()>> deferred_;  // what a signal did, told on the next turn
  bool pool_held_ = false;
  std::vector<std::shared_ptr<Child>> children_;
  int next_pid_ = 4000;
};

}  // namespace trainwatch::testing
