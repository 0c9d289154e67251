#include "capture/manifest.h"

#include <nlohmann/json.hpp>

#include "cluster/peer_record.h"
#include "core/time_format.h"
#include "detect/incident_json.h"

namespace trainwatch::capture {

using json = nlohmann::ordered_json;

namespace {

std::int64_t EpochMillis(WallTime time) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
}

}  // namespace

std::string FiringLines(const detect::Incident& incident) {
  std::string text;
  for (const detect::Firing& firing : incident.firings) {
    text += "== " + firing.event.rule_id + " at " + firing.stream;
    if (firing.event.line != 0) {
      text += ':';  // appended apart: GCC 12 warns falsely on ":" + to_string (PR 105329)
      text += std::to_string(firing.event.line);
    }
    text += '\n';
    for (const std::string& line : firing.context) {
      text += "   " + line + "\n";
    }
    text += ">> " + firing.event.text + "\n";
    if (!firing.event.summary.empty()) {
      text += "   summary: " + firing.event.summary + "\n";
    }
    text += "\n";
  }
  return text;
}

std::string ManifestJson(const CaptureRequest& request,
                         const std::vector<collect::CollectorResult>& collectors,
                         const bundle::BundleSummary& summary,
                         const collect::RedactionCounts& redactions, bool reduced,
                         const std::string& reduced_why, const std::string& host,
                         const std::string& container, WallTime created,
                         const std::string& ranks_json, const std::string& early_why) {
  const detect::Incident& incident = request.incident;
  json firings = json::array();
  for (const detect::Firing& firing : incident.firings) {
    json entry = {{"rule", firing.event.rule_id},
                  {"kind", rules::RuleKindName(firing.event.kind)},
                  {"stream", firing.stream},
                  {"line", firing.event.line},
                  {"text", firing.event.text}};
    if (!firing.event.summary.empty()) {
      entry["summary"] = firing.event.summary;
    }
    if (!firing.event.frame.empty()) {
      entry["frame"] = firing.event.frame;
    }
    entry["time_ms"] = EpochMillis(firing.time);
    entry["context"] = firing.context;
    firings.push_back(std::move(entry));
  }
  json lanes = json::array();
  for (const ProgressLane& lane : request.lanes) {
    json advances = json::array();
    for (const WallTime at : lane.advances) {
      advances.push_back(EpochMillis(at));
    }
    lanes.push_back({{"stream", lane.stream},
                     {"bar", lane.bar},
                     {"rank", lane.rank ? json(*lane.rank) : json(nullptr)},
                     {"pids", lane.pids},
                     {"first_seen_ms", EpochMillis(lane.first_seen)},
                     {"complete", lane.complete},
                     {"advances_ms", std::move(advances)}});
  }
  json collected = json::array();
  for (const collect::CollectorResult& result : collectors) {
    json entry = {
        {"name", result.name},           {"status", collect::CollectorStatusName(result.status)},
        {"exit_code", result.exit_code}, {"duration_seconds", result.duration_seconds},
        {"bytes", result.bytes},         {"truncated", result.truncated}};
    if (!result.detail.empty()) {
      entry["detail"] = result.detail;
    }
    collected.push_back(std::move(entry));
  }
  json files = json::array();
  for (const bundle::ArtifactSummary& artifact : summary.artifacts) {
    json entry = {{"path", artifact.path}, {"bytes", artifact.bytes}};
    if (artifact.truncated) {
      entry["truncated"] = true;
    }
    if (!artifact.problem.empty()) {
      entry["problem"] = artifact.problem;
    }
    files.push_back(std::move(entry));
  }
  json redacted = json::object();
  for (const auto& [rule, count] : redactions.by_rule) {
    redacted[rule] = count;
  }
  json manifest = {{"schema_version", 1},
                   {"trainwatch_version", TRAINWATCH_VERSION},
                   {"created", FormatUtc(created, TimeFormat::kIsoSeconds)},
                   {"host", host},
                   {"container", container.empty() ? json(nullptr) : json(container)},
                   {"incident",
                    {{"id", incident.id},
                     {"kind", detect::IncidentKindName(incident)},
                     {"summary", incident.summary},
                     {"cause", rules::CauseName(incident.verdict.verdict.cause)},
                     {"action", rules::ActionName(incident.verdict.verdict.action)},
                     {"verdict", incident.verdict.why},
                     {"fingerprint", incident.fingerprint},
                     {"recurrence", incident.recurrence.count},
                     {"rules", incident.rules},
                     {"opened", FormatUtc(incident.opened, TimeFormat::kIsoSeconds)},
                     {"opened_ms", EpochMillis(incident.opened)},
                     {"firings", std::move(firings)}}},
                   {"created_ms", EpochMillis(created)},
                   {"job", detect::JobJson(incident.job)},
                   {"report", "report.html"},  // the second member, made from this one
                   {"timeline", {{"lanes", std::move(lanes)}}},
                   {"reduced", reduced},
                   {"collectors", std::move(collected)},
                   {"files", std::move(files)},
                   {"redactions", std::move(redacted)},
                   {"redaction_pass_seconds", summary.first_pass_seconds}};
  if (!request.reason.empty()) {
    manifest["incident"]["reason"] = request.reason;
  }
  if (incident.peer) {
    manifest["incident"]["peer"] = detect::PeerJson(*incident.peer);
  }
  if (incident.attempt) {
    manifest["incident"]["attempt"] = detect::AttemptJson(*incident.attempt);
  }
  if (!request.job_incidents.empty()) {
    json job_incidents = json::array();
    for (const cluster::PeerRecord& other : request.job_incidents) {
      job_incidents.push_back(json::parse(cluster::PeerRecordJson(other)));  // as published
    }
    manifest["job_incidents"] = std::move(job_incidents);
  }
  if (reduced) {
    manifest["reduced_why"] = reduced_why;
  }
  if (!early_why.empty()) {
    manifest["early"] = early_why;
  }
  if (!request.container.empty()) {
    manifest["job_container"] = request.container;
  }
  if (!ranks_json.empty()) {
    manifest["ranks"] = json::parse(ranks_json, nullptr, false);
  }
  return manifest.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace trainwatch::capture
