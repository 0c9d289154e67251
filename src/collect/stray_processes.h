// Stray processes of a command collector: what it started that outlived it. A grandchild that
// calls setsid leaves the collector's session and process group, so a signal to the group
// misses it, and once its parent exits /proc no longer says whose it was (its PPid is 1). Its
// environment still does: each run gets a mark (an environment entry of its own) that every
// descendant inherits, and the processes carrying that mark are found by reading
// /proc/PID/environ. (No cgroup: the daemon is not given one to manage.) Blocking /proc reads,
// a few milliseconds on a host with a few thousand processes; any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trainwatch::collect {

// The environment entry's name; its value is unique to one run.
inline constexpr std::string_view kRunMarkName = "TRAINWATCH_COLLECTOR_RUN";

// The pids below `proc_root` whose environment holds `mark` ("NAME=value") as a whole entry.
// Processes that cannot be read (another user's, gone meanwhile) are not counted.
std::vector<int> ProcessesMarked(const std::string& proc_root, std::string_view mark);

}  // namespace trainwatch::collect
