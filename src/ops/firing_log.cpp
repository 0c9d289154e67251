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

bool FiringLog::Counted(Run& run, const Said& firing) {
  if (run.count++ == 0) {
    run.first = firing.where;
  }
  run.last = firing.where;
  std::uint64_t power = 10;
  while (power < run.count) {
    power *= 10;
  }
  return run.count == power;
}

void FiringLog::Record(const Said& firing, detect::IncidentBuilder::Disposition disposition,
                       const detect::Incident* open) {
  using Disposition = detect::IncidentBuilder::Disposition;
  switch (disposition) {
    case Disposition::kOpened:
      quiet_runs_.erase(firing.rule);
      spdlog::warn("{} fired at {}: {} (incident {} opened)", firing.rule, firing.where,
                   firing.what, open != nullptr ? open->id : "?");
      break;
    case Disposition::kJoined: {
      quiet_runs_.erase(firing.rule);
      const std::string id = open != nullptr ? open->id : "?";
      if (joined_runs_.size() >= kMaxRuns) {
        joined_runs_.erase(joined_runs_.begin());
      }
      Run& run = joined_runs_[{id, firing.rule}];
      if (run.count == 0) {
        spdlog::info("{} fired at {}: {} (joins incident {})", firing.rule, firing.where,
                     firing.what, id);
      }
      if (Counted(run, firing)) {
        spdlog::info("{}: {} firings have joined incident {}, from {} to {}", firing.rule,
                     run.count, id, run.first, run.last);
      }
      break;
    }
    case Disposition::kCoolingDown:
    case Disposition::kWarningAlone: {
      Run& run = quiet_runs_[firing.rule];
      if (run.count == 0) {
        if (disposition == Disposition::kCoolingDown) {
          spdlog::info(
              "{} fired at {}: {} (in cooldown, no new incident; further firings are counted in "
              "`trainwatch status`)",
              firing.rule, firing.where, firing.what);
        } else {
          spdlog::info("{} (warning) at {}: {} (further ones are counted in `trainwatch status`)",
                       firing.rule, firing.where, firing.what);
        }
      }
      if (Counted(run, firing)) {
        spdlog::info("{}: {} firings {}, from {} to {}", firing.rule, run.count,
                     disposition == Disposition::kCoolingDown ? "in cooldown" : "as warnings",
                     run.first, run.last);
      }
      ++quiet_firings_[firing.rule];
      break;
    }
  }
}

void FiringLog::FollowedUp(const std::string& incident_id, const Said& firing,
                           const std::string& why) {
  if (joined_runs_.size() >= kMaxRuns) {
    joined_runs_.erase(joined_runs_.begin());
  }
  Run& run = joined_runs_[{incident_id, firing.rule}];
  if (run.count == 0) {
    spdlog::warn(
        "{} fired at {}: {} — joins incident {} as a follow-up ({}); no capture of its "
        "own",
        firing.rule, firing.where, firing.what, incident_id, why);
  }
  if (Counted(run, firing)) {
    spdlog::info("{}: {} firings have joined incident {} (follow-ups: {}), from {} to {}",
                 firing.rule, run.count, incident_id, why, run.first, run.last);
  }
}

}  // namespace trainwatch::ops
