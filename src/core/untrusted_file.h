// Opening a file that a job, a rank or a peer names: the daemon runs as root, so such a path
// may lead anywhere a user can point a link (/etc/shadow), to a FIFO that blocks whoever opens
// or reads it, or to a file of gigabytes. Here the path is resolved without following its last
// link (and, as asked, without any link, or inside a process's root so that no link or ".."
// leads out of it), the object opened is checked by fstat (its type, its owner) before it is
// opened for I/O, and reads are capped. Nothing here blocks on a FIFO or a device: the I/O open
// is O_NONBLOCK and happens only once the type is known. Stateless; any thread.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>

#include "core/result.h"
#include "core/unique_fd.h"

namespace trainwatch {

struct UntrustedPath {
  // Where a relative `path` resolves from (AT_FDCWD: the current directory). With `in_root`
  // it is a process's root (/proc/PID/root opened) and an absolute path resolves below it.
  int dir_fd = -100;  // AT_FDCWD
  bool in_root = false;
  bool no_symlinks = false;       // no link anywhere in the path (else only the last refused)
  bool follow_last_link = false;  // a last link is followed too (inside the root, with in_root)
  mode_t type = S_IFREG;          // what it must be: S_IFREG, S_IFIFO, S_IFDIR
  std::optional<uid_t> owner;     // whom it must belong to; nullopt: anyone
  std::optional<off_t> max_size;  // a regular file larger than this is refused
};

// `path` opened for `access` (O_RDONLY or O_WRONLY) once it passed every check of `how`;
// errors read "<path>: <why>" ("is a FIFO, not a regular file", "owned by uid 0, not 1000").
Result<UniqueFd> OpenUntrusted(const std::string& path, const UntrustedPath& how, int access);

struct UntrustedText {
  std::string text;
  bool truncated = false;  // the file went on past the cap
  struct stat info {};     // what fstat said of the file read
};

// Up to `max_bytes` of `path`, opened as above for reading.
Result<UntrustedText> ReadUntrusted(const std::string& path, const UntrustedPath& how,
                                    std::size_t max_bytes);

// The owner of process `pid` (its /proc/PID directory's uid); nullopt once it is gone.
std::optional<uid_t> ProcessOwner(const std::string& proc_root, pid_t pid);

}  // namespace trainwatch
