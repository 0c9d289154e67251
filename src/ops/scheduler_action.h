// What was done about an incident in the scheduler: this node drained in Slurm for a verdict
// that calls for it, or why not (slurm/slurm_drain_sink.h). A record of incidents.jsonl of
// its own ({"scheduler_for": id, ...}) and a line of the daemon's log. Value type; any thread.
#pragma once

#include <string>

#include "detect/incident.h"

namespace trainwatch::ops {

struct SchedulerAction {
  std::string incident_id;
  std::string what;    // "drain"
  std::string node;    // the scheduler's name for this node
  std::string reason;  // what the scheduler was told
  bool done = false;   // false: not asked (why says so) or it failed
  std::string why;     // "an application failure never drains a node", "scontrol exited 1: ..."
  detect::WallTime at{};
};

// {"scheduler_for", "what", "node", "reason", "done", "why", "at"}: one line of JSON without its
// newline.
std::string SchedulerActionJson(const SchedulerAction& action);

}  // namespace trainwatch::ops
