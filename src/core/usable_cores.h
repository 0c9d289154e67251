// How many cores this process may run on: its affinity mask (a container's cpuset or
// `taskset` narrows it), where std::thread::hardware_concurrency counts the machine's. For
// the work that spreads over threads (scan of several files, the bundle writer's first pass).
// Any thread.
#pragma once

namespace trainwatch {

// At least 1.
int UsableCores();

}  // namespace trainwatch
