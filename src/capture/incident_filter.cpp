#include "capture/incident_filter.h"

namespace trainwatch::capture {

bool WantedFor(const config::When& when, const detect::Incident& incident) {
  if (!incident.reason.empty()) {
    return when.manual;
  }
  if (incident.peer) {
    return when.peer;
  }
  switch (incident.kind) {
    case rules::RuleKind::kCrash:
      return when.crash;
    case rules::RuleKind::kHang:
      return when.hang;
    case rules::RuleKind::kDevice:
      return when.device;
    case rules::RuleKind::kWarning:
      return when.warning;
    case rules::RuleKind::kDiverged:
      return when.diverged;
    case rules::RuleKind::kSlow:
      return when.slow;
  }
  return false;
}

}  // namespace trainwatch::capture
