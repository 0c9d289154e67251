#include "detect/incident_json.h"

#include <nlohmann/json.hpp>

#include "core/time_format.h"
#include "detect/attempt_text.h"
#include "detect/incident_root.h"

namespace trainwatch::detect {
namespace {

using json = nlohmann::ordered_json;

std::int64_t EpochMillis(WallTime time) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
}

}  // namespace

std::string IncidentJson(const Incident& incident) {
  json firings = json::array();
  for (const Firing& firing : incident.firings) {
    json entry = {{"rule", firing.event.rule_id},
                  {"kind", rules::RuleKindName(firing.event.kind)},
                  {"cause", rules::CauseName(firing.event.verdict.cause)},
                  {"action", rules::ActionName(firing.event.verdict.action)},
                  {"source", firing.source},
                  {"stream", firing.stream},
                  {"line", firing.event.line},
                  {"text", firing.event.text},
                  {"time", FormatUtc(firing.time)},
                  {"context", firing.context}};
    if (!firing.event.summary.empty()) {
      entry["summary"] = firing.event.summary;
      entry["summary_line"] = firing.event.summary_line;
    }
    if (!firing.event.frame.empty()) {
      entry["frame"] = firing.event.frame;
    }
    if (firing.event.cut) {
      entry["cut"] = true;
    }
    if (firing.event.role != rules::Role::kPrimary) {
      entry["role"] = rules::RoleName(firing.event.role);  // another's failure, suffered or told
    }
    if (firing.rank) {
      entry["rank"] = *firing.rank;
    }
    if (!firing.writers.empty()) {
      json writers = json::array();
      for (const source::WriterProcess& writer : firing.writers) {
        writers.push_back({{"pid", writer.pid}, {"comm", writer.comm}});
      }
      entry["writers"] = std::move(writers);
    }
    if (!firing.departed_writers.empty()) {
      entry["departed_writers"] = firing.departed_writers;
    }
    if (!firing.file_id.empty()) {
      entry["file_id"] = firing.file_id;
      entry["head_bytes"] = firing.head_bytes;
      entry["head_hash"] = firing.head_hash;
    }
    firings.push_back(std::move(entry));
  }
  json record = {{"id", incident.id},
                 {"kind", IncidentKindName(incident)},
                 {"summary", incident.summary},
                 {"cause", rules::CauseName(incident.verdict.verdict.cause)},
                 {"action", rules::ActionName(incident.verdict.verdict.action)},
                 {"verdict", incident.verdict.why},
                 {"rules", incident.rules},
                 {"opened", FormatUtc(incident.opened)},
                 {"closed", FormatUtc(incident.closed)},
                 {"opened_ms", EpochMillis(incident.opened)},
                 {"firings", std::move(firings)}};
  if (const Firing* root = RootError(incident.firings); root != nullptr && root->rank) {
    record["first_failing_rank"] = *root->rank;  // the rank that printed the root error
  }
  if (const std::optional<int> straggler = ReportedStraggler(incident)) {
    record["straggler_rank"] = *straggler;  // the rank the job's own report names slowest
  }
  if (!incident.reason.empty()) {
    record["reason"] = incident.reason;
  }
  if (incident.peer) {
    record["peer"] = PeerJson(*incident.peer);
  }
  if (!incident.fingerprint.empty()) {
    record["fingerprint"] = incident.fingerprint;
    record["recurrence"] = {
        {"count", incident.recurrence.count},
        {"first", FormatUtc(incident.recurrence.first)},
        {"previous", incident.recurrence.count > 1 ? json(FormatUtc(incident.recurrence.previous))
                                                   : json(nullptr)}};
  }
  if (!incident.job.node.empty()) {
    record["job"] = JobJson(incident.job);
  }
  if (incident.attempt) {
    record["attempt"] = AttemptJson(*incident.attempt);
  }
  if (incident.more_firings > 0) {
    record["more_firings"] = incident.more_firings;
  }
  return record.dump(-1, ' ', false, json::error_handler_t::replace);
}

nlohmann::ordered_json JobJson(const JobIdentity& job) {
  json record = {{"id", job.id.empty() ? json(nullptr) : json(job.id)},
                 {"id_from", job.id_from},
                 {"node", job.node},
                 {"node_from", job.node_from},
                 {"node_rank", job.node_rank ? json(*job.node_rank) : json(nullptr)},
                 {"ranks", job.ranks}};
  if (!job.restart.empty()) {
    record["restart"] = job.restart;
  }
  if (!job.slurm_step.empty()) {
    record["slurm_step"] = job.slurm_step;
  }
  return record;
}

nlohmann::ordered_json AttemptJson(const AttemptPlace& attempt) {
  return {{"number", attempt.number},
          {"marker", attempt.marker},
          {"step", StepJson(attempt.step)},
          {"same_as", attempt.same_as},
          {"why", attempt.why},
          {"remedy_failed", attempt.remedy_failed},
          {"failed_first", attempt.failed_first},
          {"boot_id", attempt.boot_id},
          {"pids", attempt.pids}};
}

nlohmann::ordered_json PeerJson(const PeerLink& peer) {
  return {{"job", peer.job_id},
          {"node", peer.node},
          {"incident", peer.incident_id},
          {"kind", peer.kind},
          {"summary", peer.summary},
          {"cause", peer.cause},
          {"action", peer.action},
          {"first_rank", peer.first_rank ? json(*peer.first_rank) : json(nullptr)},
          {"opened_ms", peer.opened_ms}};
}

std::string IncidentKindName(const Incident& incident) {
  if (incident.peer) {
    return "peer";
  }
  return incident.reason.empty() ? std::string(rules::RuleKindName(incident.kind)) : "manual";
}

std::string FollowUpJson(const std::string& id, const Firing& firing, const std::string& why) {
  json record = {
      {"follow_up_for", id},
      {"rule", firing.event.rule_id},
      {"kind", rules::RuleKindName(firing.event.kind)},
      {"source", firing.source},
      {"stream", firing.stream},
      {"line", firing.event.line},
      {"summary", firing.event.summary.empty() ? firing.event.text : firing.event.summary},
      {"time", FormatUtc(firing.time)},
      {"why", why}};
  if (!firing.event.summary.empty() && firing.event.summary != firing.event.text) {
    record["text"] = firing.event.text;  // the line itself (what a resolving line is matched to)
  }
  if (firing.rank) {
    record["rank"] = *firing.rank;
  }
  return record.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace trainwatch::detect
