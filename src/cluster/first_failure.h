// Which of a job's incidents, across its nodes, is its first failure: what `trainwatch job`
// and the report's job table both say. The earliest, unless an incident that names its first
// failing rank (a rank's own error) opened within the clock skew allowed between nodes: the
// earliest may tell only the consequences (its ranks' "Connection closed by peer" as the
// failing rank's peers saw it), which are no one's first failure. Pure; any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace trainwatch::cluster {

// Clocks of a job's nodes may differ by this much (NTP keeps them within milliseconds; a node
// without it drifts seconds).
inline constexpr std::chrono::seconds kSkewAllowance{5};

struct IncidentOpening {
  std::int64_t opened_ms = 0;     // on its node's clock
  bool names_first_rank = false;  // it knows the rank that printed its root error
};

// The index of the first failure among `openings`, oldest first. REQUIRES: not empty.
inline std::size_t FirstFailureIndex(const std::vector<IncidentOpening>& openings) {
  const auto allowance = std::chrono::duration_cast<std::chrono::milliseconds>(kSkewAllowance);
  for (std::size_t i = 0; i < openings.size(); ++i) {
    if (openings[i].names_first_rank &&
        openings[i].opened_ms - openings.front().opened_ms <= allowance.count()) {
      return i;
    }
  }
  return 0;
}

}  // namespace trainwatch::cluster
