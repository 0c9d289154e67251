// One incident as an Alertmanager alert, and the JSON that carries it: the body of a POST to
// /api/v2/alerts, and the daemon's own record of the alerts it still owes Alertmanager
// (<state_dir>/alerts.json). Labels identify an alert, so they are fixed when the incident is
// written (the rank is the one whose line fired first, not a suspect found later);
// annotations may change (the bundle, the suspects) and are sent again. Pure functions; any
// thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "config/alert_config.h"
#include "core/result.h"
#include "detect/incident.h"

namespace trainwatch::alert {

inline constexpr const char* kAlertName = "TrainwatchIncident";

struct Alert {
  std::string incident_id;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::int64_t starts_ms = 0;  // the incident's opening
  std::int64_t ends_ms = 0;    // its resolution; 0 while open
  // Resolved: which configured URLs (by index) have not acknowledged its end yet.
  std::uint32_t end_unsent = 0;
};

// The alert of a written incident: labels alertname, job_id, node, rank (where the first
// firing line names one), kind, cause, action, fingerprint and the config's own; annotations
// summary, description (the verdict), incident, first_failing.
Alert AlertOf(const detect::Incident& incident, const config::AlertmanagerConfig& config);

// The body of one POST: every alert given, open ones ending `valid_for` after `now_ms` (they
// expire unless posted again: a daemon that is gone leaves no alert firing for ever).
std::string PostBody(const std::vector<const Alert*>& alerts, std::int64_t now_ms,
                     std::int64_t valid_for_ms);

// alerts.json: {"version": 1, "alerts": [...]}.
std::string StoreJson(const std::map<std::string, Alert>& alerts);
// Fails, saying why, on what is not such a file; skips entries that are not alerts.
Result<std::map<std::string, Alert>> ParseStore(std::string_view text);

}  // namespace trainwatch::alert
