// Copies of a containerised rank's files for gdb, made in the daemon's own cache (root's).
// gdb reads a rank's libraries inside the rank's mount namespace by itself (its "target:"
// sysroot), where the image's links resolve inside the image. Two files it cannot be given
// that way:
//   - the executable: gdb resolves every path it is given to its real path, and /proc/PID/exe
//     resolves to *our* /usr/bin/python3.11, whose symbols do not fit the image's build;
//   - the executable's debug information (python3.X-dbg in the image), which gdb looks for by
//     build id under its debug-file-directory, on our file system.
// So both are copied: the executable through /proc/PID/exe, the debug file opened inside the
// rank's root (no link leads out of it, a regular file, size capped) — never a host path a
// container's user could point a link at. Blocking file reads and writes; any thread.
#pragma once

#include <cstddef>
#include <string>

#include "core/result.h"

namespace trainwatch::capture {

// Copies more than this many bytes for no file: an interpreter is a few MiB, its debug
// information tens.
inline constexpr std::size_t kMaxContainerFileCopy = 256u << 20;
// Copies kept once unused for 10 minutes; the least recently used go first. Those used in the
// last 10 minutes are kept whatever their number (a capture's own are never removed under it).
inline constexpr std::size_t kMaxContainerFileCopies = 8;

// The copy of `exe` (a rank's /proc/PID/exe) in `dir` (made 0700 if absent), named by the
// file's identity (device, inode, size, change time) so that a second capture of the same
// image reuses it. An error when it is not a regular file, is larger than the cap, or cannot
// be read or written.
Result<std::string> CopyOfExecutable(const std::string& exe, const std::string& dir);

// The image's debug information for GNU build id `build_id` (hex), found at
// /usr/lib/debug/.build-id/ab/cdef....debug inside the rank's root `root` (/proc/PID/root),
// copied into `dir`; returns the folder to give gdb as a debug-file-directory. An error when
// the image has none (then py-bt cannot read the build: install python3.X-dbg in the image).
Result<std::string> CopyOfDebugInfo(const std::string& root, const std::string& build_id,
                                    const std::string& dir);

}  // namespace trainwatch::capture
