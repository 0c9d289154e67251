// The built-in collectors of the machine's facts: /proc's cpu, memory, load and uptime, the
// kernel, cpu governors, hostname and addresses, and disk usage of the directories that
// matter. Plain blocking functions without state, run on the daemon's thread pool; any thread.
// Status as for every built-in collector: kOk when at least one thing asked for was read (the
// rest are lines of `detail`), kFailed when none could be, kSkipped when none was asked for.
#pragma once

#include <string>
#include <vector>

#include "collect/artifact.h"

namespace trainwatch::collect {

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

}  // namespace trainwatch::collect
