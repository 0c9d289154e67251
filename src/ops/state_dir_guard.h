// StateDirGuard: the daemon's hold on its state_dir. The lock file (flock) makes one daemon per
// state_dir; when the directory is deleted under a running daemon (an operator's `rm -rf`, a
// cleanup script), the lock goes with it and a second daemon could start on the same config.
// Check() notices (the directory or the lock file gone or replaced) and restores both; if
// another daemon took the lock meanwhile, it says so and this one must stop writing. Blocking
// stat/open/flock on a local directory: cheap enough for the loop, called each second and
// before each incident record. Loop thread only.
#pragma once

#include <string>

#include "core/result.h"
#include "core/unique_fd.h"

namespace trainwatch::ops {

class StateDirGuard {
 public:
  explicit StateDirGuard(std::string dir) : dir_(std::move(dir)) {}

  // Creates the directory and takes its lock: true when taken, false when another process
  // holds it, an error when the directory or lock file cannot be made.
  Result<bool> Acquire();

  enum class Verdict {
    kIntact,          // the directory and our lock file are where they were
    kRestored,        // they were gone: recreated, and the lock is ours again
    kTakenByAnother,  // they were gone, and another daemon holds the new lock
    kCannotRestore,   // they are gone and cannot be made again (`why` says why)
  };
  Verdict Check(std::string* why);

  const std::string& dir() const { return dir_; }

 private:
  std::string LockPath() const { return dir_ + "/lock"; }
  std::string dir_;
  UniqueFd lock_;
};

}  // namespace trainwatch::ops
