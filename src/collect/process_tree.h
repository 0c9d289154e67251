// The processes of the machine as a tree, read once from /proc/*/stat: each one's parent, start
// time and CPU time so far. What the rank map walks (a launcher down to its ranks) and what a
// CPU sample is taken from. Blocking; any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainwatch::collect {

struct ProcessStat {
  pid_t pid = 0;
  pid_t ppid = 0;
  std::string comm;
  char state = '?';               // R running, S sleeping, D disk sleep, Z zombie, T stopped
  std::uint64_t cpu_ticks = 0;    // utime + stime, in clock ticks
  std::uint64_t start_ticks = 0;  // since boot, in clock ticks: orders siblings by start
};

// One line of /proc/PID/stat; nullopt when it does not parse. The comm may hold spaces and
// parentheses: the fields after it are found from the last ')'.
std::optional<ProcessStat> ParseProcessStat(std::string_view line);

class ProcessTree {
 public:
  // Every process under `proc_root` now; those that exit during the scan, and zombies (exited,
  // not yet reaped), are left out.
  static ProcessTree Read(const std::string& proc_root = "/proc");
  explicit ProcessTree(std::vector<ProcessStat> processes);

  const ProcessStat* Find(pid_t pid) const;
  // The children of `pid`, oldest first.
  std::vector<pid_t> Children(pid_t pid) const;
  // `roots` and everything below them, each once, in the order of a depth-first walk.
  std::vector<pid_t> WithDescendants(const std::vector<pid_t>& roots) const;
  // Whether `ancestor` is a parent, grandparent... of `pid`.
  bool IsAncestor(pid_t ancestor, pid_t pid) const;

 private:
  std::map<pid_t, ProcessStat> processes_;
  std::multimap<pid_t, pid_t> children_;  // parent -> child
};

// The CPU time of `pid` now, in clock ticks (utime + stime); nullopt when it is gone (or a
// zombie).
std::optional<std::uint64_t> ReadCpuTicks(pid_t pid, const std::string& proc_root = "/proc");

}  // namespace trainwatch::collect
