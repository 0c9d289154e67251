// RootedFiles: another process's file system as that process sees it, read by the daemon
// (root) without being led out of it. Every path resolves below the process's root
// (/proc/PID/root) by openat2 with RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS: its absolute
// symlinks (a venv's bin/python -> /usr/bin/python3) land in its root, not the daemon's, and
// no link or ".." leads out of it; a file is opened for reading only once fstat says it is a
// regular one (a link planted to a device is never opened). Needs Linux 5.6 (openat2); on an
// older kernel nothing resolves. One per walk; any thread.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>

#include "core/directory.h"
#include "core/unique_fd.h"

namespace trainwatch::collect {

class RootedFiles {
 public:
  // `root`: "/proc/42/root", or "" for this process's own file system.
  explicit RootedFiles(const std::string& root);

  bool IsDirectory(const std::string& path) const { return Is(path, S_IFDIR); }
  bool IsFile(const std::string& path) const { return Is(path, S_IFREG); }
  // Up to `max_bytes` of a regular file; nullopt for anything else or an error.
  std::optional<std::string> Read(const std::string& path, std::size_t max_bytes) const;
  std::optional<DirPtr> OpenDir(const std::string& path) const;

 private:
  int Open(const std::string& path, int flags) const;
  bool Is(const std::string& path, mode_t type) const;

  UniqueFd root_;
};

}  // namespace trainwatch::collect
