// Incidents whose capture never finished: the daemon was stopped during it (SIGTERM past the
// stop grace, a kill -9, a crash). Found at start in incidents.jsonl, so that the operator
// hears of every incident left without a bundle, once. Blocking file reads; loop thread at
// start.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trainwatch::ops {

// The error of the bundle record written for a capture abandoned at a stop.
inline constexpr std::string_view kInterruptedCapture =
    "interrupted: the daemon stopped during this incident's capture";
// The error of the bundle record written at the next start, once the operator was told.
inline constexpr std::string_view kReportedAtStart =
    "not captured: the daemon stopped during the capture (reported at the next start)";

struct UncapturedIncident {
  std::string id;
  std::string summary;
  std::string opened;  // as recorded: UTC text
};

// Reads the last `tail_bytes` of `path` (incidents.jsonl): the incidents that wanted a bundle
// (not a warning unless manual) and whose last bundle record is missing or says
// kInterruptedCapture. Oldest first. A missing file has none.
std::vector<UncapturedIncident> FindUncapturedIncidents(const std::string& path,
                                                        std::size_t tail_bytes);

}  // namespace trainwatch::ops
