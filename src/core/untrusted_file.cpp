#include "core/untrusted_file.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "core/proc_files.h"

namespace trainwatch {
namespace {

std::string TypeName(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return "a regular file";
    case S_IFDIR:
      return "a directory";
    case S_IFIFO:
      return "a FIFO";
    case S_IFLNK:
      return "a symbolic link";
    case S_IFSOCK:
      return "a socket";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    default:
      return "of an unknown type";
  }
}

// An O_PATH descriptor of what `path` names, resolved as `how` says.
int OpenPath(const std::string& path, const UntrustedPath& how) {
  open_how request{};
  const int nofollow = how.follow_last_link ? 0 : O_NOFOLLOW;
  request.flags = static_cast<std::uint64_t>(O_PATH | nofollow | O_CLOEXEC);
  request.resolve = RESOLVE_NO_MAGICLINKS;
  if (how.in_root) {
    request.resolve |= RESOLVE_IN_ROOT;
  }
  if (how.no_symlinks) {
    request.resolve |= RESOLVE_NO_SYMLINKS;
  }
  const int fd =
      static_cast<int>(::syscall(SYS_openat2, how.dir_fd, path.c_str(), &request, sizeof request));
  if (fd >= 0 || errno != ENOSYS || how.in_root || how.no_symlinks) {
    return fd;  // a kernel before 5.6 cannot keep a path inside a root: refused
  }
  return ::openat(how.dir_fd, path.c_str(), O_PATH | nofollow | O_CLOEXEC);
}

}  // namespace

Result<UniqueFd> OpenUntrusted(const std::string& path, const UntrustedPath& how, int access) {
  const UniqueFd handle(OpenPath(path, how));
  if (handle.get() < 0) {
    const int error = errno;
    if (error == ELOOP || error == EXDEV) {
      return Error{path + ": leads through a symbolic link (" + std::strerror(error) +
                   "); not followed"};
    }
    return Error{path + ": " + std::strerror(error)};
  }
  struct stat info {};
  if (::fstat(handle.get(), &info) != 0) {
    return Error{path + ": " + std::strerror(errno)};
  }
  if ((info.st_mode & S_IFMT) != how.type) {
    return Error{path + ": is " + TypeName(info.st_mode) + ", not " + TypeName(how.type)};
  }
  if (how.owner && info.st_uid != *how.owner) {
    return Error{path + ": owned by uid " + std::to_string(info.st_uid) + ", not " +
                 std::to_string(*how.owner)};
  }
  if (how.max_size && S_ISREG(info.st_mode) && info.st_size > *how.max_size) {
    return Error{path + ": " + std::to_string(info.st_size) + " bytes, over the cap of " +
                 std::to_string(*how.max_size)};
  }
  // Reopened through our own descriptor: the very object checked, whatever the path names now.
  // O_NONBLOCK: a FIFO (where one is expected) never blocks the open.
  UniqueFd file(::open(("/proc/self/fd/" + std::to_string(handle.get())).c_str(),
                       access | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (file.get() < 0) {
    return Error{path + ": " + std::strerror(errno)};
  }
  return file;
}

Result<UntrustedText> ReadUntrusted(const std::string& path, const UntrustedPath& how,
                                    std::size_t max_bytes) {
  Result<UniqueFd> file = OpenUntrusted(path, how, O_RDONLY);
  if (!file) {
    return file.error();
  }
  UntrustedText out;
  if (::fstat(file->get(), &out.info) != 0) {
    return Error{path + ": " + std::strerror(errno)};
  }
  Result<ProcText> text = ReadToEnd(file->get(), max_bytes);
  if (!text) {
    return Error{path + text.error().message};  // ": <strerror>"
  }
  out.text = std::move(text->text);
  out.truncated = text->truncated;
  return out;
}

std::optional<uid_t> ProcessOwner(const std::string& proc_root, pid_t pid) {
  struct stat info {};
  if (::stat(ProcPath(proc_root, pid, "").c_str(), &info) != 0) {
    return std::nullopt;
  }
  return info.st_uid;
}

}  // namespace trainwatch
