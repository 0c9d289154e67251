#include "cluster/peer_record.h"

#include <nlohmann/json.hpp>

#include "detect/incident_json.h"
#include "diagnose/suspects.h"

namespace trainwatch::cluster {
namespace {

using json = nlohmann::ordered_json;

std::int64_t EpochMillis(detect::WallTime time) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
}

json Optional(const std::optional<int>& value) { return value ? json(*value) : json(nullptr); }

std::optional<int> IntOr(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? std::optional(it->get<int>())
                                                       : std::nullopt;
}

std::string TextOr(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string SafeName(std::string_view text) {
  std::string name;
  for (const char c : text.substr(0, 128)) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
    name += safe ? c : '_';
  }
  if (name.empty() || name == "." || name == "..") {
    name.insert(0, "_");
  }
  return name;
}

}  // namespace

PeerRecord PeerRecordOf(const detect::Incident& incident) {
  PeerRecord record;
  record.job_id = incident.job.id;
  record.node = incident.job.node;
  record.node_rank = incident.job.node_rank;
  record.ranks = incident.job.ranks;
  record.incident_id = incident.id;
  record.kind = detect::IncidentKindName(incident);
  record.summary = incident.summary;
  record.cause = rules::CauseName(incident.verdict.verdict.cause);
  record.action = rules::ActionName(incident.verdict.verdict.action);
  record.verdict = incident.verdict.why;
  record.fingerprint = incident.fingerprint;
  record.opened_ms = EpochMillis(incident.opened);
  record.first_rank = FirstFailingRank(incident);
  return record;
}

std::optional<int> FirstFailingRank(const detect::Incident& incident) {
  for (const detect::Firing& firing : incident.firings) {
    if (firing.event.kind != rules::RuleKind::kWarning) {
      return diagnose::RankOfLine(firing.event.text);  // "[rank3]: ..."
    }
  }
  return std::nullopt;
}

std::string PeerRecordJson(const PeerRecord& record) {
  json suspects = json::array();
  for (const PeerSuspect& suspect : record.suspects) {
    suspects.push_back(
        {{"rank", Optional(suspect.rank)}, {"label", suspect.label}, {"reason", suspect.reason}});
  }
  const json out = {{"version", kPeerRecordVersion},
                    {"job_id", record.job_id},
                    {"node", record.node},
                    {"node_rank", Optional(record.node_rank)},
                    {"ranks", record.ranks},
                    {"incident_id", record.incident_id},
                    {"kind", record.kind},
                    {"summary", record.summary},
                    {"cause", record.cause},
                    {"action", record.action},
                    {"verdict", record.verdict},
                    {"fingerprint", record.fingerprint},
                    {"opened_ms", record.opened_ms},
                    {"first_rank", Optional(record.first_rank)},
                    {"bundle", record.bundle},
                    {"suspects", std::move(suspects)},
                    {"published_ms", record.published_ms}};
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<PeerRecord> ParsePeerRecord(std::string_view text) {
  const json in = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!in.is_object()) {
    return Error{"not a JSON object (a file still being written, or not trainwatch's)"};
  }
  if (IntOr(in, "version") != kPeerRecordVersion) {
    return Error{"version " + (in.contains("version") ? in["version"].dump() : "missing") +
                 ", not " + std::to_string(kPeerRecordVersion)};
  }
  PeerRecord record;
  record.job_id = TextOr(in, "job_id");
  record.node = TextOr(in, "node");
  record.incident_id = TextOr(in, "incident_id");
  if (record.job_id.empty() || record.node.empty() || record.incident_id.empty()) {
    return Error{"no job_id, node or incident_id"};
  }
  record.node_rank = IntOr(in, "node_rank");
  for (const json& rank : in.value("ranks", json::array())) {
    if (rank.is_number_integer()) {
      record.ranks.push_back(rank.get<int>());
    }
  }
  record.kind = TextOr(in, "kind");
  record.summary = TextOr(in, "summary");
  record.cause = TextOr(in, "cause");
  record.action = TextOr(in, "action");
  record.verdict = TextOr(in, "verdict");
  record.fingerprint = TextOr(in, "fingerprint");
  const auto opened = in.find("opened_ms");
  record.opened_ms =
      opened != in.end() && opened->is_number_integer() ? opened->get<std::int64_t>() : 0;
  record.first_rank = IntOr(in, "first_rank");
  record.bundle = TextOr(in, "bundle");
  for (const json& suspect : in.value("suspects", json::array())) {
    if (suspect.is_object()) {
      record.suspects.push_back(
          {IntOr(suspect, "rank"), TextOr(suspect, "label"), TextOr(suspect, "reason")});
    }
  }
  const auto published = in.find("published_ms");
  record.published_ms =
      published != in.end() && published->is_number_integer() ? published->get<std::int64_t>() : 0;
  return record;
}

std::string JobDirName(std::string_view job_id) { return SafeName(job_id); }

std::string PeerFileName(std::string_view incident_id, std::string_view node) {
  return SafeName(incident_id) + "@" + SafeName(node) + ".json";
}

std::string OwnFileSuffix(std::string_view node) { return "@" + SafeName(node) + ".json"; }

bool IsPeerFileName(std::string_view name) {
  return name.size() > 5 && name.ends_with(".json") && name.front() != '.' &&
         name.find('@') != std::string_view::npos;
}

}  // namespace trainwatch::cluster
