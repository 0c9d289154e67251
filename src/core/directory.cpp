#include "core/directory.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace trainwatch {

Result<DirPtr> OpenDirAt(int parent, const std::string& name, bool follow) {
  int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW);
  int fd = ::openat(parent, name.c_str(), flags);
  if (fd < 0) {
    return Error{std::strerror(errno)};
  }
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    int error = errno;
    ::close(fd);
    return Error{std::strerror(error)};
  }
  return DirPtr(dir);
}

std::vector<std::string> DirNames(DIR* dir) {
  std::vector<std::string> names;
  while (dirent* entry = ::readdir(dir)) {
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) {
      names.emplace_back(entry->d_name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::string> ReadLinkAt(int dirfd, const std::string& path) {
  std::string target(PATH_MAX, '\0');
  ssize_t n = ::readlinkat(dirfd, path.c_str(), target.data(), target.size());
  if (n < 0) {
    return Error{path + ": " + std::strerror(errno)};
  }
  target.resize(static_cast<std::size_t>(n));
  return target;
}

int ParseDecimalName(std::string_view text) {
  if (text.empty() || text.size() > 9) {
    return -1;
  }
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      return -1;
    }
    value = value * 10 + (c - '0');
  }
  return value;
}

Status ForEachProcess(const std::string& proc_root, const ProcessVisitor& visit) {
  Result<DirPtr> proc = OpenDirAt(AT_FDCWD, proc_root, /*follow=*/true);
  if (!proc) {
    return proc.error();
  }
  while (const dirent* entry = ::readdir(proc->get())) {
    if (const int pid = ParseDecimalName(entry->d_name); pid > 0) {
      visit(::dirfd(proc->get()), pid, entry->d_name);
    }
  }
  return Status::Ok();
}

}  // namespace trainwatch
