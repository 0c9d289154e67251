// The Python hook (daemon/python/sitecustomize.py): a job started with it registers the
// standard library's faulthandler so that a signal makes it write every thread's stack to
// <TRAINWATCH_STACKS_DIR>/<pid>.stacks. Here: the environment that loads it (what `trainwatch
// wrap` gives its command), finding it in a rank, and reading a dump back. Blocking file
// reads; any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainwatch::collect {

inline constexpr const char* kStacksDirVariable = "TRAINWATCH_STACKS_DIR";
inline constexpr const char* kStacksSignalVariable = "TRAINWATCH_STACKS_SIGNAL";

// The signal the hook is registered on: SIGRTMIN+3, which no common library handles. Its
// default action terminates, so it is sent only to a process whose hook caught it
// (FindPythonHook).
int StacksSignal();

// The variables that load the hook from `hook_dir` (the folder of sitecustomize.py) and have
// it write into `stacks_dir`: PYTHONPATH (with `pythonpath`, the current one, after it),
// TRAINWATCH_STACKS_DIR, TRAINWATCH_STACKS_SIGNAL. "NAME=value" each.
std::vector<std::string> PythonHookEnvironment(const std::string& hook_dir,
                                               const std::string& stacks_dir,
                                               const std::string& pythonpath);

struct PythonHook {
  std::string root;  // the rank's root as this process reaches it: /proc/PID/root
  std::string file;  // as the rank names it (inside its root)
  uid_t owner = 0;   // the rank's uid: the file must be its, a regular file
  int signal = 0;
  std::uint64_t size = 0;  // before the signal: the dump is what comes after
};

// The hook of `pid`, when its environment (`environ`, NUL-separated) names a stacks folder,
// its <pid>.stacks is there, and /proc/PID/status shows the signal caught; else nullopt and
// `why` says which of those is missing.
std::optional<PythonHook> FindPythonHook(pid_t pid, std::string_view environ,
                                         const std::string& proc_root, std::string& why);

// What the hook wrote after `hook.size`, up to `max_bytes`. The file is the rank's to name:
// resolved inside its root, its last link never followed, read only when it is a regular file
// the rank owns (never a FIFO, never /etc/shadow).
std::string ReadHookDump(const PythonHook& hook, std::size_t max_bytes = 1 << 20);

}  // namespace trainwatch::collect
