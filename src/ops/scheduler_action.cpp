#include "ops/scheduler_action.h"

#include <nlohmann/json.hpp>

#include "core/time_format.h"

namespace trainwatch::ops {

std::string SchedulerActionJson(const SchedulerAction& action) {
  const nlohmann::ordered_json record = {{"scheduler_for", action.incident_id},
                                         {"what", action.what},
                                         {"node", action.node},
                                         {"reason", action.reason},
                                         {"done", action.done},
                                         {"why", action.why},
                                         {"at", FormatUtc(action.at)}};
  return record.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace trainwatch::ops
