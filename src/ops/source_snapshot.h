// The snapshot of one watched source for `trainwatch status` and the metrics: its counts, and
// every stream's with the file facts (offsets, writers, whether it is being finished). Apart
// from daemon_snapshot.h so that the renderers and their tests need no running source. Loop
// thread only.
#pragma once

#include "detect/watched_source.h"
#include "ops/daemon_snapshot.h"

namespace trainwatch::ops {

SourceSnapshot SnapshotOf(detect::WatchedSource& source, SteadyTime now, WallTime wall_now);

}  // namespace trainwatch::ops
