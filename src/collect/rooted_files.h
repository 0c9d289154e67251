// RootedFiles: another process's file system as that process sees it, read by the daemon
// (root) without being led out of it: every path resolves below the process's root
// (/proc/PID/root) through core/untrusted_file.h, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, so
// its absolute symlinks (a venv's bin/python -> /usr/bin/python3) land in its root, not the
// daemon's, and no link or ".." leads out of it; a file is opened for I/O only once fstat says
// it is what it must be (a link planted to a device, a FIFO, is never opened). Needs Linux 5.6
// (openat2); on an older kernel nothing resolves. One per walk; any thread.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>

#include "core/directory.h"
#include "core/result.h"
#include "core/unique_fd.h"
#include "core/untrusted_file.h"

namespace trainwatch::collect {

class RootedFiles {
 public:
  // `root`: "/proc/42/root", or "" for this process's own file system.
  explicit RootedFiles(const std::string& root);

  bool IsDirectory(const std::string& path) const { return Is(path, S_IFDIR); }
  bool IsFile(const std::string& path) const { return Is(path, S_IFREG); }
  // Up to `max_bytes` of a regular file (links followed, inside the root); nullopt for
  // anything else or an error.
  std::optional<std::string> Read(const std::string& path, std::size_t max_bytes) const;
  std::optional<DirPtr> OpenDir(const std::string& path) const;

  // What the process itself names for the daemon to touch (a dump, a pipe): the object at
  // `path`, not through a last link, opened for `access` only once it is of `type`, owned by
  // `owner` and, for a regular file, of at most `max_size` bytes (untrusted_file.h).
  Result<UniqueFd> OpenOwned(const std::string& path, mode_t type, uid_t owner, int access,
                             std::optional<off_t> max_size = std::nullopt) const;

 private:
  UntrustedPath Below(mode_t type) const;
  bool Is(const std::string& path, mode_t type) const;

  UniqueFd root_;
  std::string root_name_;  // for errors
};

}  // namespace trainwatch::collect
