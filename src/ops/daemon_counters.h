// DaemonCounters: what the daemon counted since it started — firings, incidents, bundles,
// collectors that hung — for the metrics textfile. Plain data with the few rules of how an
// outcome is counted. Loop thread only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "capture/capture_types.h"

namespace trainwatch::ops {

struct DaemonCounters {
  std::map<std::string, std::uint64_t> firings_by_rule;    // every firing, cooldown or not
  std::map<std::string, std::uint64_t> incidents_by_kind;  // crash, hang, device, manual...
  // By the verdict's cause and action ("hardware", "exclude_node").
  std::map<std::pair<std::string, std::string>, std::uint64_t> incidents_by_verdict;
  std::uint64_t bundles_written = 0;
  std::uint64_t bundle_bytes = 0;
  std::uint64_t bundles_failed = 0;   // incidents whose capture wrote no bundle
  std::uint64_t bundles_deleted = 0;  // by retention
  std::map<std::string, std::uint64_t> collector_timeouts;  // killed at deadline or abandoned
  std::map<std::string, std::uint64_t> resolved_by_how;     // progress, restart, ack

  // Counts a capture's bundle (or its absence), what retention removed, and the collectors
  // that timed out, each under its configured name in `commands` ("py-spy-4242", run once per
  // process, counts as "py-spy": one series per collector, not per process that ever hung).
  void CountCapture(const capture::CaptureOutcome& outcome,
                    const std::vector<std::string>& commands);
  // A number that moves whenever any count does (a collision only delays a rewrite).
  std::uint64_t Activity() const;
};

}  // namespace trainwatch::ops
