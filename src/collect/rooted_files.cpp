#include "collect/rooted_files.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

#include "core/proc_files.h"

namespace trainwatch::collect {

RootedFiles::RootedFiles(const std::string& root)
    : root_(::open(root.empty() ? "/" : root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)) {}

std::optional<std::string> RootedFiles::Read(const std::string& path, std::size_t max_bytes) const {
  const UniqueFd handle(Open(path, O_PATH));
  struct stat st {};
  if (handle.get() < 0 || ::fstat(handle.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return std::nullopt;
  }
  // Reopened through our own descriptor: the object fstat saw, not whatever the path names by
  // now.
  Result<ProcText> text = ReadProcFile("/proc/self/fd/" + std::to_string(handle.get()), max_bytes);
  return text ? std::optional<std::string>(std::move(text->text)) : std::nullopt;
}

std::optional<DirPtr> RootedFiles::OpenDir(const std::string& path) const {
  const int fd = Open(path, O_RDONLY | O_DIRECTORY);
  if (fd < 0) {
    return std::nullopt;
  }
  DIR* dir = ::fdopendir(fd);  // owns the descriptor from here
  if (dir == nullptr) {
    ::close(fd);
    return std::nullopt;
  }
  return DirPtr(dir);
}

int RootedFiles::Open(const std::string& path, int flags) const {
  if (root_.get() < 0) {
    return -1;
  }
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(::syscall(SYS_openat2, root_.get(), path.c_str(), &how, sizeof(how)));
}

bool RootedFiles::Is(const std::string& path, mode_t type) const {
  const UniqueFd handle(Open(path, O_PATH));
  struct stat st {};
  return handle.get() >= 0 && ::fstat(handle.get(), &st) == 0 && (st.st_mode & S_IFMT) == type;
}

}  // namespace trainwatch::collect
