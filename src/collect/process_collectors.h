// The built-in collectors of the training processes: finding them by command line, and
// capturing their environment (redacted here) and state (command line, status, cwd, limits,
// open files) from /proc. Plain blocking functions without state, run on the daemon's thread
// pool; any thread. Status as for every built-in collector: kOk when at least one process
// could be read (one that exited is a line of `detail`), kFailed when none, kSkipped for none.
#pragma once

#include <sys/types.h>

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

// The processes whose command line matches `pattern` (RE2 with RegexOptions(), unanchored,
// case-sensitive), by
// pid. Never this process; never a process without a command line (kernel threads, zombies).
// Processes that exit during the scan are left out. `proc_root` is for tests. Fails only on a
// pattern that does not compile.
Result<std::vector<ProcessInfo>> FindProcesses(const std::string& pattern,
                                               const std::string& proc_root = "/proc");

// The comm and command line of `pid`. Fails when the process is gone (or its comm cannot be
// read); an empty command line is not a failure (a zombie has none).
Result<ProcessInfo> DescribeProcess(pid_t pid, const std::string& proc_root = "/proc");

// A command line as /proc/PID/cmdline holds it (each argument ended by a NUL) on one line, its
// arguments joined by spaces. `quote`: each shell-quoted, so the line can be pasted back (an
// empty argument is ''); else as they are, with no trailing space for empty ones at the end.
std::string JoinCmdline(std::string_view raw, bool quote);

// The bundle folder of a process: "processes/<pid>-<comm>" (comm made safe), or
// "processes/<pid>" when its comm is unknown. Shared by CollectEnvironment, CollectProcesses
// and CollectExitedProcesses so each process has one folder.
std::string ProcessFolder(pid_t pid, const std::string& comm);

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

}  // namespace trainwatch::collect
