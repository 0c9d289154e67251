// Reads what /proc says about a process: /proc/PID/comm, cmdline and environ, and the plain
// reader under them for any /proc or /sys file (those report size 0, so they are read to EOF).
// The one reader for the collectors (collect/) and the writer scan (source/), so both agree on
// caps, the comm's newline and error text. Stateless and blocking; any thread.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "core/result.h"

namespace trainwatch {

// Read to EOF, up to this by default. A training job's environment can reach a few hundred
// KiB; cpuinfo of a 224-cpu host about 300 KiB.
inline constexpr std::size_t kMaxProcFileBytes = 4 << 20;

struct ProcText {
  std::string text;
  bool truncated = false;  // the file went on past the cap; `text` holds the cap's worth
};

// Reads `path` to its end, or to `max_bytes`. Opened with O_NONBLOCK: a FIFO planted where a
// file was expected must not hang the caller. Errors read "<path>: <strerror>".
Result<ProcText> ReadProcFile(const std::string& path, std::size_t max_bytes = kMaxProcFileBytes);
// The same for `name` below the open directory `dir_fd` (a walk that holds /proc/PID open, so a
// reused pid cannot slip in between). Errors read "<name>: <strerror>".
Result<ProcText> ReadProcFileAt(int dir_fd, const std::string& name,
                                std::size_t max_bytes = kMaxProcFileBytes);

// The same for an open descriptor, from where it stands; errors read ": <strerror>" (the caller
// puts the name before it).
Result<ProcText> ReadToEnd(int fd, std::size_t max_bytes = kMaxProcFileBytes);

// "<proc_root>/<pid>/<name>": "/proc/42/status".
std::string ProcPath(const std::string& proc_root, pid_t pid, std::string_view name);

// The process's name without the newline the kernel ends it with: "python3", "pt_main_thread".
// Fails when the process is gone.
Result<std::string> ReadProcComm(pid_t pid, const std::string& proc_root = "/proc");
// The same, below an open /proc/PID directory.
Result<std::string> ReadProcCommAt(int pid_dir_fd);

// The arguments raw, each ending with a NUL (a process that rewrote its argv may not keep
// that). Empty, not an error, for a kernel thread or a zombie.
Result<ProcText> ReadProcCmdline(pid_t pid, const std::string& proc_root = "/proc",
                                 std::size_t max_bytes = kMaxProcFileBytes);

// The environment the process was exec'ed with, raw: NAME=value entries each ending with a
// NUL. EACCES for another user's process (unless root); empty for a zombie.
Result<ProcText> ReadProcEnviron(pid_t pid, const std::string& proc_root = "/proc",
                                 std::size_t max_bytes = kMaxProcFileBytes);

// Whether the process has exited and waits to be reaped (state Z, or X while it is reaped):
// it runs no more and holds no file, though kill(pid, 0) still finds it. False when it is
// gone or its stat cannot be read.
bool IsZombie(pid_t pid, const std::string& proc_root = "/proc");

// "<proc_root>/<pid>/root" when the process's root is another directory than the caller's
// (a container's image, a chroot), where its files are reached from here; empty when it is
// ours (a private mount namespace over our root, as PrivateTmp or Slurm's job_container make,
// is not a container) or either cannot be read. Links under it resolve against the caller's
// root, not the process's: open such paths with core/untrusted_file's in_root.
std::string ForeignRootOf(pid_t pid, const std::string& proc_root = "/proc");

// The process's pid in its own PID namespace (the last field of /proc/PID/status's NSpid: what
// os.getpid() says inside a container); `pid` itself when it is in ours or that cannot be read.
pid_t PidInItsNamespace(pid_t pid, const std::string& proc_root = "/proc");

}  // namespace trainwatch
