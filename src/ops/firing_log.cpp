#include "ops/firing_log.h"

#include <spdlog/spdlog.h>

namespace trainwatch::ops {

FiringLog::Said FiringLog::Describe(const detect::Firing& firing) {
  Said said{firing.event.rule_id, firing.stream,
            firing.event.summary.empty() ? firing.event.text : firing.event.summary};
  if (firing.event.line != 0) {
    said.where += ':';  // not ":" + std::string: GCC 12's false -Wrestrict (PR 105329)
    said.where += std::to_string(firing.event.line);
  }
  return said;
}

void FiringLog::Record(const Said& firing, detect::IncidentBuilder::Disposition disposition,
                       const detect::Incident* open) {
  using Disposition = detect::IncidentBuilder::Disposition;
  switch (disposition) {
    case Disposition::kOpened:
      unlogged_.erase(firing.rule);
      spdlog::warn("{} fired at {}: {} (incident {} opened)", firing.rule, firing.where,
                   firing.what, open != nullptr ? open->id : "?");
      break;
    case Disposition::kJoined:
      unlogged_.erase(firing.rule);
      // The incident records the first firings; a flood joining it is counted there.
      if (open != nullptr && open->more_firings == 0) {
        spdlog::info("{} fired at {}: {} (joins incident {})", firing.rule, firing.where,
                     firing.what, open->id);
      }
      break;
    case Disposition::kCoolingDown:
      // Never a log line per log line: the first of a run is logged, the rest counted.
      if (unlogged_[firing.rule]++ == 0) {
        spdlog::info(
            "{} fired at {}: {} (in cooldown, no new incident; further firings are counted in "
            "`trainwatch status`)",
            firing.rule, firing.where, firing.what);
      }
      ++quiet_firings_[firing.rule];
      break;
    case Disposition::kWarningAlone:
      if (unlogged_[firing.rule]++ == 0) {
        spdlog::info("{} (warning) at {}: {} (further ones are counted in `trainwatch status`)",
                     firing.rule, firing.where, firing.what);
      }
      ++quiet_firings_[firing.rule];
      break;
  }
}

}  // namespace trainwatch::ops
