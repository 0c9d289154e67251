// The JSON form of an incident: one line of incidents.jsonl, and incident/incident.json in its
// bundle. `opened_ms` and each firing's file identity (file_id, head_bytes, head_hash) are what
// a restarted daemon reads back (IncidentLog::ReadHistory). Pure functions; any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "detect/incident.h"

namespace trainwatch::detect {

// One line of JSON, without its newline; text that is not UTF-8 becomes U+FFFD.
std::string IncidentJson(const Incident& incident);

// The record of a firing that followed up incident `id` (incident/follow_ups.h): one line of
// JSON, without its newline.
std::string FollowUpJson(const std::string& id, const Firing& firing, const std::string& why);

// {"id" (null when unknown), "id_from", "node", "node_from", "node_rank", "ranks"}, and
// "restart" and "slurm_step" where known.
nlohmann::ordered_json JobJson(const JobIdentity& job);

// {"number", "marker", "step" ({"label", "count"} or null), "same_as", "why", "remedy_failed",
//  "failed_first", "boot_id", "pids"} (incident/attempt_ledger.h reads it back).
nlohmann::ordered_json AttemptJson(const AttemptPlace& attempt);

// {"job", "node", "incident", "kind", "summary", "cause", "action", "first_rank", "opened_ms"}.
nlohmann::ordered_json PeerJson(const PeerLink& peer);

// "crash", "hang", "device", "warning", "manual" for a `trainwatch snapshot`, or "peer" for a
// capture made for another node's incident.
std::string IncidentKindName(const Incident& incident);

}  // namespace trainwatch::detect
