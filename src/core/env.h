// Env: everything the daemon's logic asks of the operating system, behind one seam in the
// spirit of LevelDB's Env — the clock, timers and deferred work on the loop, the file system
// (FileSystem), change notification for directories and files, spawning a child and sending
// it signals, and the /proc root. The daemon runs on PosixEnv (libuv and POSIX); unit tests
// run the same logic on FakeEnv (tests/support/fake_env.h), which steps time, file changes
// and child processes one event at a time, with no sleeps. Loop thread only, but for fs()
// and the clock, which any thread may use.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/file_system.h"
#include "core/quantity.h"
#include "core/result.h"

namespace trainwatch {

using SteadyTime = std::chrono::steady_clock::time_point;
using WallTime = std::chrono::system_clock::time_point;

// A timer on the loop: calls its function `delay` after Start, then every `repeat` if not 0.
// Destroying it stops it.
class LoopTimer {
 public:
  virtual ~LoopTimer() = default;
  virtual void Start(std::chrono::milliseconds delay, std::chrono::milliseconds repeat) = 0;
  virtual void Stop() = 0;
  virtual bool active() const = 0;
};

// Work run on every turn of the loop while started (reading a backlog a chunk per turn, so
// that other sources and signals get their say in between). Destroying it stops it.
class LoopIdle {
 public:
  virtual ~LoopIdle() = default;
  virtual void Start() = 0;
  virtual void Stop() = 0;
  virtual bool active() const = 0;
};

// A directory watch or a file poll; destroying it stops it.
class ChangeWatch {
 public:
  virtual ~ChangeWatch() = default;
};

// A child process started by Spawn; destroying it stops listening (the process is not
// killed: the caller signals it first when it must die).
class ChildProcess {
 public:
  virtual ~ChildProcess() = default;
  virtual int pid() const = 0;
};

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is looked up on PATH
  // Added to the daemon's environment, replacing same-named entries ("NAME=value").
  std::vector<std::string> extra_env;
  // Where it starts; empty: the daemon's own working directory.
  std::string cwd;
};

// What a child tells its parent, on the loop. Output comes in pieces as it is written; the
// process may exit before or after its output ends (a grandchild can hold the pipes).
struct ChildEvents {
  std::function<void(bool is_stderr, std::string_view bytes)> on_output;
  std::function<void(bool is_stderr)> on_output_end;
  std::function<void(std::int64_t exit_status, int term_signal)> on_exit;
};

class Env {
 public:
  virtual ~Env() = default;

  virtual SteadyTime SteadyNow() const = 0;
  virtual WallTime WallNow() const = 0;
  virtual std::unique_ptr<LoopTimer> NewTimer(std::function<void()> on_fire) = 0;
  virtual std::unique_ptr<LoopIdle> NewIdle(std::function<void()> on_turn) = 0;
  // Runs `work` on a worker thread, then `done` on the loop; `work` must not touch loop-thread
  // state: move what it needs into its captures and out through them. Should the pool refuse
  // it, both run on the loop, late but not lost.
  virtual void RunOnPool(std::function<void()> work, std::function<void()> done) = 0;
  // The pool's work under way now: how many, and how long the oldest has been at it. A worker
  // can be wedged where no deadline reaches (a read on a hung network file system sleeps
  // uninterruptibly): status shows it, and a stop does not wait for it for ever.
  struct PoolWork {
    std::size_t running = 0;
    Duration oldest{0};
  };
  virtual PoolWork PoolWorkNow() const { return {}; }

  virtual const FileSystem& fs() const = 0;
  // What happened to an entry of a watched directory: written to, renamed (a move, creation or
  // deletion), or closed by a process that had it open for writing (IN_CLOSE_WRITE: the kernel
  // tells it even of a writer it killed, which no /proc scan may ever have seen).
  enum class DirEvent { kWrite, kRename, kCloseWrite };
  // Reports changes to the entries of `dir` as they happen (inotify): the entry's name, or an
  // empty one when the watch lost track (overflow, reported as a rename), and what happened.
  using DirChange = std::function<void(std::string_view name, DirEvent event)>;
  virtual Result<std::unique_ptr<ChangeWatch>> WatchDirectory(const std::string& dir,
                                                              DirChange on_change) = 0;
  // Checks `path` every `interval` and reports when its status changed; `gone` when it can no
  // longer be stat'ed (renamed or deleted). For file systems inotify does not see.
  virtual Result<std::unique_ptr<ChangeWatch>> PollFile(
      const std::string& path, std::chrono::milliseconds interval,
      std::function<void(bool gone)> on_change) = 0;

  // Starts `options.argv` in its own session (so its own process group: a deadline kills all
  // it started), stdin closed, stdout and stderr to `events`. Fails with exactly
  // kNotInstalled as the message when the program is not on PATH.
  virtual Result<std::unique_ptr<ChildProcess>> Spawn(const SpawnOptions& options,
                                                      ChildEvents events) = 0;
  // kill(2): a negative pid is a process group.
  virtual void Signal(int pid, int signal) = 0;
  // Whether process `pid` still runs; reaps it once it is a zombie child of ours. Another's
  // zombie (exited, not yet reaped) does not run: false.
  virtual bool ProcessExists(int pid) = 0;
  // Where /proc is ("/proc" but in tests).
  virtual const std::string& proc_root() const = 0;

  static constexpr std::string_view kNotInstalled = "not installed here (not on PATH)";
};

}  // namespace trainwatch
