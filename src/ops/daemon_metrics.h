// The daemon's Prometheus metric families, from its snapshot: rule firings, incidents,
// bundles, collector timeouts, hooks, what each source read, and each progress bar's position
// and last advance. Every series a config can name (each rule, kind, collector, hook) is there
// from the start at 0: a counter that first appears at 1 hides its first increase from rate().
// Pure function; any thread.
#pragma once

#include <vector>

#include "ops/daemon_snapshot.h"
#include "ops/prometheus_text.h"

namespace trainwatch::ops {

std::vector<MetricFamily> DaemonMetricFamilies(const DaemonSnapshot& snapshot);

}  // namespace trainwatch::ops
