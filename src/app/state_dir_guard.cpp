#include "app/state_dir_guard.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace trainwatch::app {

Result<bool> StateDirGuard::Acquire() {
  std::error_code made;
  std::filesystem::create_directories(dir_, made);
  if (made) {
    return Error{dir_ + ": " + made.message()};
  }
  UniqueFd fd(::open(LockPath().c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (fd.get() < 0) {
    return Error{LockPath() + ": " + std::strerror(errno)};
  }
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return false;
    }
    return Error{LockPath() + ": " + std::strerror(errno)};
  }
  lock_ = std::move(fd);
  return true;
}

StateDirGuard::Verdict StateDirGuard::Check(std::string* why) {
  struct stat held {};
  struct stat named {};
  // The lock we hold must be the file the path names now: a deleted directory (or a deleted or
  // replaced lock file) leaves our flock on an inode no one else can see.
  if (lock_.get() >= 0 && ::fstat(lock_.get(), &held) == 0 &&
      ::stat(LockPath().c_str(), &named) == 0 && held.st_dev == named.st_dev &&
      held.st_ino == named.st_ino) {
    return Verdict::kIntact;
  }
  Result<bool> taken = Acquire();
  if (!taken) {
    *why = taken.error().message;
    return Verdict::kCannotRestore;
  }
  if (!*taken) {
    lock_ = UniqueFd();
    *why = "another process holds ";
    *why += LockPath();
    return Verdict::kTakenByAnother;
  }
  return Verdict::kRestored;
}

}  // namespace trainwatch::app
