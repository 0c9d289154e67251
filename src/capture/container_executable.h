// A copy of a containerised rank's executable for gdb. gdb resolves every path it is given to
// its real path, and /proc/PID/exe or /proc/PID/root/usr/bin/python3.11 resolve to *our*
// /usr/bin/python3.11: gdb then reads this host's interpreter's symbols against the
// container's build and py-bt finds no frame. The copy, in the daemon's own cache (root's),
// is a plain path gdb keeps; its libraries it reads under the rank's root (set sysroot).
// Blocking file reads and writes; any thread.
#pragma once

#include <cstddef>
#include <string>

#include "core/result.h"

namespace trainwatch::capture {

// Copies more than this many bytes for no rank: an interpreter is a few MiB.
inline constexpr std::size_t kMaxExecutableCopy = 256u << 20;
// Copies kept in the cache; the least recently used go first.
inline constexpr std::size_t kMaxExecutableCopies = 8;

// The copy of `exe` (a rank's /proc/PID/exe) in `dir` (made 0700 if absent), named by the
// file's identity (device, inode, size, change time) so that a second capture of the same
// image reuses it. An error when it is not a regular file, is larger than the cap, or cannot
// be read or written.
Result<std::string> CopyOfExecutable(const std::string& exe, const std::string& dir);

}  // namespace trainwatch::capture
