// What a capture learns of the job from the sources being watched: the log files (for their
// tails), the directories they live in (for disk usage), and the training processes — the
// writers of its streams, alive or remembered from while they lived, and those its firings
// name. Loop thread only (the sources are the loop's).
#pragma once

#include <vector>

#include "capture/capturer.h"
#include "detect/watched_source.h"

namespace trainwatch::capture {

void AddJobFacts(const std::vector<detect::WatchedSource*>& sources, CaptureRequest& request);

}  // namespace trainwatch::capture
