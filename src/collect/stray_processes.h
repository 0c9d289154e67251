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

#include "core/env.h"

namespace trainwatch::collect {

// The environment entry's name; its value is unique to one run.
inline constexpr std::string_view kRunMarkName = "TRAINWATCH_COLLECTOR_RUN";

// The pids below `proc_root` whose environment holds the run mark `mark`
// ("TRAINWATCH_COLLECTOR_RUN=value") as a whole entry.
// Processes that cannot be read (another user's, gone meanwhile) are not counted.
std::vector<int> ProcessesMarked(const std::string& proc_root, std::string_view mark);

// Every process carrying a run's mark, with the pid of the trainwatch that ran it (the mark's
// value is "<that pid>.<run>").
struct RunProcess {
  int pid = 0;
  int owner = 0;
};
std::vector<RunProcess> ProcessesOfRuns(const std::string& proc_root);

// Kills the processes left by collector runs of a trainwatch that is gone: one killed with
// SIGKILL mid-capture never kills its collectors, and one that ignores SIGTERM (or hangs on a
// wedged device) would live on, outside systemd, which kills the unit's whole cgroup: in a
// container's sidecar, say. Called once at start; the /proc walk runs on the pool, the
// liveness checks and signals on the loop.
void KillCollectorsOfDeadRuns(Env& env);

}  // namespace trainwatch::collect
