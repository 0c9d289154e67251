// What a capture learns of the job from the sources being watched: the log files (for their
// tails), the directories they live in (for disk usage), and the training processes — the
// writers of its streams, alive or remembered from while they lived, and those its firings
// name; for a slow incident only those its firings name (one stream's pace is one job's) —
// and the recent history of every progress bar, for the report's timeline. Loop thread
// only (the sources are the loop's).
#pragma once

#include <vector>

#include "capture/capture_types.h"
#include "detect/watched_source.h"

namespace trainwatch::capture {

// `now` and `wall_now` are the same moment on both clocks (bars keep steady times).
void AddJobFacts(const std::vector<detect::WatchedSource*>& sources, CaptureRequest& request,
                 detect::SteadyTime now, WallTime wall_now);

}  // namespace trainwatch::capture
