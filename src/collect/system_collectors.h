// The built-in collectors: what the daemon captures in-process (no fork, no shell) at an
// incident — the training processes' environment and state, the machine's facts, disk usage,
// log tails, directories such as $HABANA_LOGS, operator-named paths. Plain blocking functions
// without state, run on the daemon's thread pool; any thread. Each yields one CollectorResult
// whose artifacts sit in one bundle folder per area (system/, processes/, logs/, extra/...).
//
// Status, for all of them: kOk when at least one of the things asked for was read (what could
// not be — a process that exited, a file without permission — is a line of `detail`, so one
// dead rank does not hide the others); kFailed when none could be; kSkipped when nothing was
// asked for. `bytes` is the sum of the artifacts' sizes (content size, or length for a file
// range); `truncated` says some output was dropped at a limit.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collect/artifact.h"
#include "collect/redactor.h"
#include "core/result.h"

namespace trainwatch::collect {

struct ProcessInfo {
  pid_t pid = 0;
  std::string comm;     // /proc/PID/comm without its newline: "python3", "pt_main_thread"
  std::string cmdline;  // the arguments joined by spaces (NULs as spaces)
};

// The processes whose command line matches `pattern` (RE2, unanchored, case-sensitive), by
// pid. Never this process; never a process without a command line (kernel threads, zombies).
// Processes that exit during the scan are left out. `proc_root` is for tests. Fails only on a
// pattern that does not compile.
Result<std::vector<ProcessInfo>> FindProcesses(const std::string& pattern,
                                               const std::string& proc_root = "/proc");

// The comm and command line of `pid`. Fails when the process is gone (or its comm cannot be
// read); an empty command line is not a failure (a zombie has none).
Result<ProcessInfo> DescribeProcess(pid_t pid, const std::string& proc_root = "/proc");

// A path or name made into one safe bundle file name: no '/', only [A-Za-z0-9._-+], others
// become '_', leading "/" and "./" dropped: "/data/run1/rank0.log" -> "data_run1_rank0.log".
// Never empty, ".", or "..". Not unique by itself: the collectors add "-2", "-3"... on clashes.
std::string SafeBundleName(std::string_view path);

// The bundle folder of a process: "processes/<pid>-<comm>" (comm made safe), or
// "processes/<pid>" when its comm is unknown. Shared by CollectEnvironment and
// CollectProcesses so each process has one folder.
std::string ProcessFolder(const ProcessInfo& process);

// "environment": the daemon's own environment as it is now (`environ`, setenv included) in
// system/trainwatch-environ.txt, and each process's /proc/PID/environ (its environment at exec)
// in processes/<pid>-<comm>/environ.txt, one NAME=value per line, through
// Redactor::RedactEnvironment — so these artifacts have redact=false: it is done. What was
// redacted is added to `counts` (the caller's: not shared between threads). A process that
// vanished, is unreadable (EACCES) or has an empty environment (a zombie) is a detail line.
// kFailed when pids were given and none could be read (the daemon's environment is kept).
CollectorResult CollectEnvironment(const std::vector<pid_t>& pids, const Redactor& redactor,
                                   RedactionCounts& counts, const std::string& proc_root = "/proc");

// "processes": for each pid, under processes/<pid>-<comm>/: cmdline.txt (the invocation, its
// arguments shell-quoted so it can be pasted back), status.txt (/proc/PID/status), cwd.txt and
// exe.txt (readlink), limits.txt, open-files.txt ("fd -> target" per descriptor, by fd). Left
// to the writer's redactor (a token in argv). A file that cannot be read is a detail line.
CollectorResult CollectProcesses(const std::vector<pid_t>& pids,
                                 const std::string& proc_root = "/proc");

// "system": under system/: cpuinfo.txt, meminfo.txt, loadavg.txt, uptime.txt (/proc/uptime and
// the same in days and hours), kernel.txt (uname(2): sysname nodename release version machine,
// as `uname -a` prints them), cpu-governors.txt ("cpuN: governor" per cpu from
// <sys_root>/devices/system/cpu/cpuN/cpufreq/scaling_governor, "none" where it is absent),
// hostname.txt (gethostname) and network.txt (getifaddrs: "interface family address" per IPv4
// or IPv6 address). Kernel, hostname and network come from system calls, whatever the roots.
CollectorResult CollectSystemFacts(const std::string& proc_root = "/proc",
                                   const std::string& sys_root = "/sys");

// "disk_usage": statvfs of each directory — total, used, free, available to non-root (bytes,
// with a human form) and inodes — one line each in system/disk-usage.txt. A missing or
// unreadable directory is a line saying so (and a detail line).
CollectorResult CollectDiskUsage(const std::vector<std::string>& dirs);

// "log_tails": the last `tail_bytes` of each file, as an Artifact naming the file and the byte
// range (streamed by the bundle writer, not read here), at logs/<SafeBundleName(path)> (unique
// within the call). When the range does not start at 0 it is moved forward to the next line
// start, found by reading a 64 KiB window, so the tail starts with a whole line (a line longer
// than the window, or the file's last line, is cut rather than left out); such an artifact is
// truncated. A symlink named by the operator is
// resolved and its target tailed. A missing or non-regular file is a detail line.
CollectorResult CollectLogTails(const std::vector<std::string>& files, std::uint64_t tail_bytes);

// "habana_logs" and any directory copy, named `name`: every regular file under `dir`, newest
// first (by mtime; ties by path), at <prefix>/<path relative to dir>, until `max_bytes` in all.
// The file that would cross the cap contributes its tail up to the cap (moved forward to a line
// start as in CollectLogTails: the newest lines of a log are the ones wanted), marked
// truncated; older files are left out, counted in detail. Never follows a symlink below `dir`:
// symlinked files and directories are skipped and named in detail (a link to /etc is never
// entered), subdirectories are opened relative to their parent with O_NOFOLLOW, and the writer
// opens the files with O_NOFOLLOW. `dir` itself may be a symlink (the operator named it).
// Walks at most 32 levels deep and 100000 entries. A missing `dir`: kMissing.
CollectorResult CollectDirectory(const std::string& name, const std::string& dir,
                                 const std::string& prefix, std::uint64_t max_bytes);

// "extra_paths": paths the operator named. A file is copied from its start, up to
// `max_bytes_per_file` (then truncated), at extra/<SafeBundleName(path)>; a directory is listed
// — type, size, mtime and relative path of each entry, two levels deep, symlinks shown with
// their target and not followed, at most 10000 entries — in
// extra/<SafeBundleName(path)>.listing.txt (a checkpoints directory's listing, not its gigabytes).
// Missing paths are detail lines.
CollectorResult CollectPaths(const std::vector<std::string>& paths,
                             std::uint64_t max_bytes_per_file);

}  // namespace trainwatch::collect
