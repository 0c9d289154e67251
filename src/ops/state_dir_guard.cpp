#include "ops/state_dir_guard.h"

#include <fcntl.h>
#include <spdlog/fmt/fmt.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/trusted_path.h"

namespace trainwatch::ops {

namespace {

// A state_dir this user may not write (a fresh container volume is root's, and the image is
// run with --user): say whose it is and what to do, not only "Permission denied".
std::string NotWritable(const std::string& dir, const std::string& path, int error) {
  std::string message = path + ": " + std::strerror(error);
  struct stat info {};
  if ((error != EACCES && error != EPERM) || ::stat(dir.c_str(), &info) != 0) {
    return message;
  }
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", info.st_mode & 07777);
  const std::string uid = std::to_string(::geteuid());
  const std::string gid = std::to_string(::getegid());
  message += fmt::format(
      ": the state_dir {} is owned by uid {}, gid {} with mode {}, and this daemon runs as "
      "uid {}, gid {}; make it writable for that user (chown {}:{} {}; in a container, a "
      "volume owned by the --user the image runs as) or point state_dir elsewhere",
      dir, info.st_uid, info.st_gid, mode, uid, gid, uid, gid, dir);
  return message;
}

}  // namespace

Result<bool> StateDirGuard::Acquire() {
  std::error_code made;
  std::filesystem::create_directories(dir_, made);
  if (made) {
    return Error{dir_ + ": " + made.message()};
  }
  // The state_dir holds what the daemon trusts (its offsets, its compiled rules, its socket):
  // a directory another user may write, or could swap (one above it theirs), is refused.
  for (const std::string& dir : {dir_, dir_ + "/cache"}) {
    if (Result<std::string> trusted = CheckTrustedPath(dir, ::geteuid());
        !trusted.ok() && (dir == dir_ || std::filesystem::exists(dir))) {
      return Error{trusted.error().message +
                   ": a state_dir (and its cache) must be this daemon's alone, owned by root "
                   "or uid " +
                   std::to_string(::geteuid()) + " and writable by no other user"};
    }
  }
  UniqueFd fd(::open(LockPath().c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.get() < 0) {
    return Error{NotWritable(dir_, LockPath(), errno)};
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

}  // namespace trainwatch::ops
