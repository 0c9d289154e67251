// PosixEnv: the Env of the running daemon — libuv's timers, idle handles, one inotify
// descriptor for every directory watch, fs_poll and uv_spawn on the daemon's loop; POSIX for
// the rest.
#pragma once

#include <uv.h>

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/env.h"

namespace trainwatch {

class InotifyHub;  // the loop's inotify descriptor (posix_env.cpp)

// This process's environment with `extra` (NAME=value) added, replacing same-named entries:
// what a child started with extra variables gets.
std::vector<std::string> EnvironmentWith(const std::vector<std::string>& extra);

class PosixEnv final : public Env {
 public:
  explicit PosixEnv(uv_loop_t* loop, std::string proc_root = "/proc")
      : loop_(loop), proc_root_(std::move(proc_root)) {}

  SteadyTime SteadyNow() const override { return std::chrono::steady_clock::now(); }
  WallTime WallNow() const override { return std::chrono::system_clock::now(); }
  std::unique_ptr<LoopTimer> NewTimer(std::function<void()> on_fire) override;
  std::unique_ptr<LoopIdle> NewIdle(std::function<void()> on_turn) override;
  void RunOnPool(std::function<void()> work, std::function<void()> done) override;
  PoolWork PoolWorkNow() const override;

  const FileSystem& fs() const override { return RealFileSystem(); }
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

  uv_loop_t* loop() const { return loop_; }

 private:
  // When each piece of pool work under way began (shared with the workers, which may outlive
  // this Env when a stop does not wait for a wedged one).
  struct PoolStarts {
    std::mutex mutex;
    std::multiset<SteadyTime> started;
  };
  std::shared_ptr<PoolStarts> pool_starts_ = std::make_shared<PoolStarts>();
  uv_loop_t* loop_;
  std::string proc_root_;
  std::weak_ptr<InotifyHub> inotify_;  // shared by the directory watches, made by the first
};

}  // namespace trainwatch
