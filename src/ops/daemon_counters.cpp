#include "ops/daemon_counters.h"

#include <algorithm>
#include <cctype>

namespace trainwatch::ops {

void DaemonCounters::CountCapture(const capture::CaptureOutcome& outcome,
                                  const std::vector<std::string>& commands) {
  if (!outcome.path.empty()) {
    ++bundles_written;
    bundle_bytes += outcome.bytes;
  } else {
    ++bundles_failed;
  }
  bundles_deleted += outcome.deleted.size();
  for (const std::string& collector : outcome.timed_out) {
    std::string name = collector;
    for (const std::string& command : commands) {
      const std::string prefix = command + "-";
      if (collector.size() > prefix.size() && collector.compare(0, prefix.size(), prefix) == 0 &&
          std::all_of(collector.begin() + static_cast<std::ptrdiff_t>(prefix.size()),
                      collector.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) {
        name = command;
      }
    }
    ++collector_timeouts[name];
  }
}

std::uint64_t DaemonCounters::Activity() const {
  std::uint64_t sum = bundles_written + bundle_bytes + bundles_failed + bundles_deleted;
  for (const auto* counts :
       {&firings_by_rule, &incidents_by_kind, &collector_timeouts, &resolved_by_how}) {
    for (const auto& [name, count] : *counts) {
      sum = sum * 31 + count;
    }
  }
  for (const auto& [verdict, count] : incidents_by_verdict) {
    sum = sum * 31 + count;
  }
  return sum;
}

}  // namespace trainwatch::ops
