// Directories and links through descriptors, for walks that must not be fooled by a symlink
// swapped in (/proc, /sys, $HABANA_LOGS, log folders): an owned DIR*, opening a directory below
// another without following links, its sorted names, a link's target, and the decimal names
// /proc uses. Stateless; any thread.
#pragma once

#include <dirent.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace trainwatch {

struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};
using DirPtr = std::unique_ptr<DIR, DirCloser>;

// Opens `name` below `parent` (or AT_FDCWD) as a directory. Without `follow`, never through a
// symlink (O_NOFOLLOW: a directory swapped for a link to /etc after it was stat'ed fails, with
// ENOTDIR since O_DIRECTORY sees the link first). Errors are strerror's text.
Result<DirPtr> OpenDirAt(int parent, const std::string& name, bool follow);

// The names in an open directory but "." and "..", sorted.
std::vector<std::string> DirNames(DIR* dir);

// The target of the symlink `path`, relative to `dirfd` (or AT_FDCWD).
Result<std::string> ReadLinkAt(int dirfd, const std::string& path);

// A decimal number as /proc names pids, descriptors and cpus; -1 for anything else.
int ParseDecimalName(std::string_view text);

// Calls `visit` with each process directory of `proc_root` (`proc_fd` is proc_root's open
// descriptor, for openat; `name` is the pid as named there), in directory order; the one
// walk of /proc the writer scan, the process collectors and the stray sweep share. Errors
// (proc_root unreadable) are strerror's text.
using ProcessVisitor = std::function<void(int proc_fd, int pid, const char* name)>;
Status ForEachProcess(const std::string& proc_root, const ProcessVisitor& visit);

}  // namespace trainwatch
