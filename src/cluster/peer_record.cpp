#include "cluster/peer_record.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "core/printable.h"
#include "core/untrusted_file.h"
#include "detect/attempt_text.h"
#include "detect/incident_json.h"
#include "detect/incident_root.h"
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
  if (it == object.end() || !it->is_number_integer() || *it < json(INT32_MIN) ||
      *it > json(INT32_MAX)) {
    return std::nullopt;
  }
  return it->get<int>();
}

constexpr std::size_t kMaxIdBytes = 256;
constexpr std::size_t kMaxTextBytes = 4096;
constexpr std::size_t kMaxSuspects = 64;
constexpr int kMaxRank = 1 << 20;
constexpr int kMaxWaitSamples = 1 << 24;  // 150 a rank, far more ranks than a node has

// A field past its limit fails the whole record: a record is written by a trainwatch, and one
// that breaks the schema is not one to act on.
struct SchemaError {
  std::string why;
};

std::string TextOr(const json& object, const char* key, std::size_t max_bytes = kMaxTextBytes) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) {
    return {};
  }
  const auto& text = it->get_ref<const std::string&>();
  if (text.size() > max_bytes) {
    throw SchemaError{std::string(key) + " is " + std::to_string(text.size()) +
                      " bytes, over its limit of " + std::to_string(max_bytes)};
  }
  return Printable(text);
}

std::optional<int> RankOr(const json& object, const char* key) {
  std::optional<int> value = IntOr(object, key);
  if (value && (*value < 0 || *value > kMaxRank)) {
    throw SchemaError{std::string(key) + " " + std::to_string(*value) + " is out of range"};
  }
  return value;
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

// The record in `in` (a JSON object of the right version); throws SchemaError.
Result<PeerRecord> RecordOf(const json& in) {
  PeerRecord record;
  record.job_id = TextOr(in, "job_id", kMaxIdBytes);
  record.node = TextOr(in, "node", kMaxIdBytes);
  record.incident_id = TextOr(in, "incident_id", kMaxIdBytes);
  if (record.job_id.empty() || record.node.empty() || record.incident_id.empty()) {
    return Error{"no job_id, node or incident_id"};
  }
  record.node_rank = RankOr(in, "node_rank");
  record.uid = IntOr(in, "uid");
  if (record.uid && *record.uid < 0) {
    throw SchemaError{"uid " + std::to_string(*record.uid) + " is out of range"};
  }
  const json no_ranks = json::array();
  const auto ranks = in.find("ranks");
  for (const json& rank : ranks != in.end() && ranks->is_array() ? *ranks : no_ranks) {
    if (!rank.is_number_integer() || rank < json(0) || rank > json(kMaxRank)) {
      throw SchemaError{"ranks holds " + rank.dump().substr(0, 32) + ", not a rank"};
    }
    record.ranks.push_back(rank.get<int>());
  }
  record.kind = TextOr(in, "kind", kMaxIdBytes);
  record.summary = TextOr(in, "summary");
  record.cause = TextOr(in, "cause");
  record.action = TextOr(in, "action");
  record.verdict = TextOr(in, "verdict");
  record.fingerprint = TextOr(in, "fingerprint");
  const auto opened = in.find("opened_ms");
  record.opened_ms =
      opened != in.end() && opened->is_number_integer() ? opened->get<std::int64_t>() : 0;
  record.first_rank = RankOr(in, "first_rank");
  if (const auto primary = in.find("primary"); primary != in.end() && primary->is_boolean()) {
    record.primary = primary->get<bool>();
  }
  record.bundle = TextOr(in, "bundle");
  const auto suspects = in.find("suspects");
  for (const json& suspect : suspects != in.end() && suspects->is_array() ? *suspects : no_ranks) {
    if (record.suspects.size() == kMaxSuspects) {
      throw SchemaError{"more than " + std::to_string(kMaxSuspects) + " suspects"};
    }
    if (suspect.is_object()) {
      record.suspects.push_back({RankOr(suspect, "rank"), TextOr(suspect, "label", kMaxIdBytes),
                                 TextOr(suspect, "reason")});
    }
  }
  record.straggler_rank = RankOr(in, "straggler_rank");
  if (const auto waiting = in.find("waiting"); waiting != in.end() && waiting->is_object()) {
    diagnose::NodeWaits sum;
    sum.samples = IntOr(*waiting, "samples").value_or(0);
    sum.peer_waits = IntOr(*waiting, "peer_waits").value_or(0);
    sum.ranks = IntOr(*waiting, "ranks").value_or(0);
    if (sum.samples <= 0 || sum.samples > kMaxWaitSamples || sum.peer_waits < 0 ||
        sum.peer_waits > sum.samples || sum.ranks <= 0 || sum.ranks > kMaxRank) {
      throw SchemaError{"waiting " + waiting->dump().substr(0, 96) + " is out of range"};
    }
    record.waiting = sum;
  }
  if (const std::optional<int> attempt = IntOr(in, "attempt")) {
    if (*attempt < 1 || *attempt > kMaxRank) {
      throw SchemaError{"attempt " + std::to_string(*attempt) + " is out of range"};
    }
    record.attempt = attempt;
  }
  record.restart = TextOr(in, "restart", kMaxIdBytes);
  if (const auto step = in.find("step"); step != in.end() && step->is_object()) {
    const auto count = step->find("count");
    if (count == step->end() || !count->is_number_integer()) {
      throw SchemaError{"step " + step->dump().substr(0, 64) + " has no count"};
    }
    record.step = detect::JobStep{TextOr(*step, "label", kMaxIdBytes), count->get<std::int64_t>()};
  }
  record.retry_why = TextOr(in, "retry_why");
  const auto published = in.find("published_ms");
  record.published_ms =
      published != in.end() && published->is_number_integer() ? published->get<std::int64_t>() : 0;
  return record;
}

}  // namespace

PeerRecord PeerRecordOf(const detect::Incident& incident) {
  PeerRecord record;
  record.job_id = incident.job.id;
  record.node = incident.job.node;
  record.node_rank = incident.job.node_rank;
  record.ranks = incident.job.ranks;
  // A uid past INT_MAX (the unknown one among them) is not said: peers then refuse the record.
  if (incident.job.uid && *incident.job.uid <= static_cast<uid_t>(INT_MAX)) {
    record.uid = static_cast<int>(*incident.job.uid);
  }
  record.incident_id = incident.id;
  record.kind = detect::IncidentKindName(incident);
  record.summary = incident.summary;
  record.cause = rules::CauseName(incident.verdict.verdict.cause);
  record.action = rules::ActionName(incident.verdict.verdict.action);
  record.verdict = incident.verdict.why;
  record.fingerprint = incident.fingerprint;
  record.opened_ms = EpochMillis(incident.opened);
  record.first_rank = FirstFailingRank(incident);
  record.primary = !incident.peer && detect::RootError(incident.firings) != nullptr;
  record.straggler_rank = detect::ReportedStraggler(incident);
  record.restart = incident.job.restart;
  if (incident.attempt) {
    record.attempt = static_cast<int>(std::min<std::uint32_t>(incident.attempt->number, kMaxRank));
    record.step = incident.attempt->step;
    record.retry_why = incident.attempt->why;
  }
  return record;
}

std::optional<int> FirstFailingRank(const detect::Incident& incident) {
  const detect::Firing* root = detect::RootError(incident.firings);
  if (root == nullptr) {
    return std::nullopt;  // a hang, or only other ranks' reports of a failure: nobody is first
  }
  return root->rank ? root->rank : diagnose::RankOfLine(root->event.text);  // "[rank3]: ..."
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
                    {"uid", Optional(record.uid)},
                    {"incident_id", record.incident_id},
                    {"kind", record.kind},
                    {"summary", record.summary},
                    {"cause", record.cause},
                    {"action", record.action},
                    {"verdict", record.verdict},
                    {"fingerprint", record.fingerprint},
                    {"opened_ms", record.opened_ms},
                    {"first_rank", Optional(record.first_rank)},
                    {"primary", record.primary},
                    {"bundle", record.bundle},
                    {"suspects", std::move(suspects)},
                    {"straggler_rank", Optional(record.straggler_rank)},
                    {"waiting", record.waiting ? json{{"samples", record.waiting->samples},
                                                      {"peer_waits", record.waiting->peer_waits},
                                                      {"ranks", record.waiting->ranks}}
                                               : json()},
                    {"attempt", Optional(record.attempt)},
                    {"restart", record.restart},
                    {"step", detect::StepJson(record.step)},
                    {"retry_why", record.retry_why},
                    {"published_ms", record.published_ms}};
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<PeerRecord> ParsePeerRecord(std::string_view text) {
  const json in = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!in.is_object()) {
    return Error{"not a JSON object (a file still being written, or not trainwatch's)"};
  }
  if (IntOr(in, "version") != kPeerRecordVersion) {
    return Error{"version " +
                 (in.contains("version") ? in["version"].dump().substr(0, 32) : "missing") +
                 ", not " + std::to_string(kPeerRecordVersion)};
  }
  try {
    return RecordOf(in);
  } catch (const SchemaError& error) {
    return Error{"not a record of the schema: " + error.why};
  }
}

Result<PeerRecord> ReadPeerRecordFile(const std::string& path) {
  UntrustedPath how;
  how.max_size = static_cast<off_t>(kMaxPeerRecordBytes);
  Result<UntrustedText> text = ReadUntrusted(path, how, kMaxPeerRecordBytes);
  if (!text) {
    return text.error();
  }
  Result<PeerRecord> record = ParsePeerRecord(text->text);
  if (!record) {
    return Error{path + ": " + record.error().message};
  }
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
