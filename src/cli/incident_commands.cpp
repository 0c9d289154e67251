#include "cli/incident_commands.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "cli/cli_config.h"
#include "cli/commands.h"
#include "config/daemon_config.h"
#include "core/printable.h"
#include "core/split.h"
#include "detect/attempt_text.h"
#include "ops/control_server.h"
#include "ops/incident_log.h"

namespace trainwatch::cli {
namespace {

using json = nlohmann::ordered_json;

Result<std::string> IncidentsFile(const IncidentsOptions& options, std::ostream& err) {
  if (!options.file.empty()) {
    return options.file;
  }
  Result<config::DaemonConfig> config = LoadCliConfig(options.config_path, err);
  if (!config) {
    return config.error();
  }
  return config->state_dir + "/incidents.jsonl";
}

Result<std::vector<json>> ReadRecords(const IncidentsOptions& options, std::ostream& err,
                                      std::string& path) {
  Result<std::string> file = IncidentsFile(options, err);
  if (!file) {
    return file.error();
  }
  path = *file;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ignored;
    if (!std::filesystem::exists(path, ignored)) {
      return std::vector<json>{};  // no incident yet
    }
    return Error{path + ": cannot read it"};
  }
  std::ostringstream text;
  text << in.rdbuf();
  return ReadIncidentRecords(text.str());
}

// A field as the terminal shows it: a log line's escape sequences made visible, never run.
std::string Text(const json& record, const char* key) {
  const auto it = record.find(key);
  return it != record.end() && it->is_string() ? Printable(it->get<std::string>()) : std::string();
}

// "3rd" for a recurrence count above 1, else "".
std::string Recurrence(const json& record) {
  const auto it = record.find("recurrence");
  if (it == record.end() || !it->is_object()) {
    return {};
  }
  const auto count_at = it->find("count");
  if (count_at == it->end() || !count_at->is_number_unsigned()) {
    return {};
  }
  const auto count = count_at->get<std::uint64_t>();
  return count > 1 ? "seen " + std::to_string(count) + " times since " + Text(*it, "first") : "";
}

// Neither a manual snapshot, nor a peer capture, nor warnings alone, nor resolved.
bool IsOpenRecord(const json& record) {
  const std::string kind = Text(record, "kind");
  return kind != "manual" && kind != "peer" && kind != "warning" &&
         !(record.contains("resolved") && record["resolved"].is_object());
}

// "open" or "resolved 2026-...: progress resumed on ...".
std::string State(const json& record) {
  if (Text(record, "kind") == "manual") {
    return "a manual snapshot";
  }
  if (Text(record, "kind") == "peer") {
    return "a capture for another node's incident (never open)";
  }
  if (Text(record, "kind") == "warning") {
    return "warnings only (never open)";
  }
  if (!record.contains("resolved") || !record["resolved"].is_object()) {
    return "open";
  }
  const json& resolved = record["resolved"];
  return "resolved " + Text(resolved, "at") + " (" + Text(resolved, "how") +
         "): " + Text(resolved, "why");
}

// The one record `options.id` names (whole or a unique start), or null after saying why not.
const json* FindOne(const std::vector<json>& records, const IncidentsOptions& options,
                    const std::string& path, std::ostream& err) {
  std::vector<const json*> found;
  for (const json& record : records) {
    const std::string id = Text(record, "id");
    if (id == options.id) {
      return &record;
    }
    if (id.rfind(options.id, 0) == 0) {
      found.push_back(&record);
    }
  }
  if (found.size() == 1) {
    return found[0];
  }
  err << "trainwatch incidents: "
      << (found.empty() ? "no incident '" + options.id + "' in " + path
                        : "'" + options.id + "' names " + std::to_string(found.size()) +
                              " incidents; give more of the id")
      << "\n";
  return nullptr;
}

// Writes an ack's record to the log itself: no daemon follows the incident.
int AppendAck(const json& record, const IncidentsOptions& options, const std::string& path,
              std::ostream& out, std::ostream& err) {
  detect::WallTime opened{};
  if (const auto at = record.find("opened_ms"); at != record.end() && at->is_number_integer()) {
    opened = detect::WallTime(std::chrono::milliseconds(at->get<std::int64_t>()));
  }
  const ops::Resolution resolution =
      ops::AckResolution(Text(record, "id"), options.why, options.now, opened);
  ops::IncidentLog log(path);
  if (Status written = log.AppendResolved(resolution); !written) {
    err << "trainwatch incidents: " << written.error().message << "\n";
    return kExitError;
  }
  out << "incident " << resolution.id << " resolved: " << resolution.why << " (recorded in " << path
      << ")\n";
  return 0;
}

}  // namespace

std::vector<json> ReadIncidentRecords(std::string_view text) {
  std::vector<json> incidents;
  std::map<std::string, std::size_t> index;  // id -> position
  if (const std::size_t end = text.rfind('\n'); end != std::string_view::npos) {
    text = text.substr(0, end + 1);  // an unfinished last line is still being written
  } else {
    text = {};
  }
  ForEachPiece(text, '\n', [&](std::string_view line) {
    json record = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!record.is_object()) {
      return;
    }
    if (record.contains("firings") && record["id"].is_string()) {
      index[record["id"].get<std::string>()] = incidents.size();
      incidents.push_back(std::move(record));
      return;
    }
    if (record["resolved"].is_string()) {
      if (const auto at = index.find(record["resolved"].get<std::string>()); at != index.end()) {
        incidents[at->second]["resolved"] = {{"how", record.value("how", json(nullptr))},
                                             {"why", record.value("why", json(nullptr))},
                                             {"at", record.value("at", json(nullptr))}};
      }
      return;
    }
    if (record["follow_up_for"].is_string()) {
      if (const auto at = index.find(record["follow_up_for"].get<std::string>());
          at != index.end()) {
        json follow_up = std::move(record);
        follow_up.erase("follow_up_for");
        json& follow_ups = incidents[at->second]["follow_ups"];
        if (!follow_ups.is_array()) {
          follow_ups = json::array();  // a hand-edited record's field of that name is replaced
        }
        follow_ups.push_back(std::move(follow_up));
      }
      return;
    }
    if (!record["bundle_for"].is_string()) {
      return;
    }
    const auto at = index.find(record["bundle_for"].get<std::string>());
    if (at == index.end()) {
      return;  // its incident was trimmed from the log
    }
    json& incident = incidents[at->second];
    incident["bundle"] = record.value("bundle", json(nullptr));
    if (record.contains("error")) {
      incident["bundle_error"] = record["error"];
    }
    for (const char* key : {"ranks", "roster", "suspects", "devices", "stacks_say"}) {
      if (record.contains(key)) {
        incident[key] = record[key];
      }
    }
  });
  return incidents;
}

int RunIncidentsList(const IncidentsOptions& options, std::ostream& out, std::ostream& err) {
  std::string path;
  Result<std::vector<json>> records = ReadRecords(options, err, path);
  if (!records) {
    err << "trainwatch incidents: " << records.error().message << "\n";
    return kExitError;
  }
  if (options.json) {
    out << json(*records).dump(2) << "\n";
    return 0;
  }
  if (records->empty()) {
    out << "no incidents in " << path << "\n";
    return 0;
  }
  for (const json& record : *records) {
    out << Text(record, "opened") << "  " << Text(record, "kind") << "  " << Text(record, "id")
        << "\n    " << Text(record, "summary") << "\n    cause " << Text(record, "cause")
        << ", action " << Text(record, "action");
    if (const std::string again = Recurrence(record); !again.empty()) {
      out << "; " << again;
    }
    out << "\n    " << State(record) << "\n";
    if (record.contains("bundle") && record["bundle"].is_string()) {
      out << "    bundle " << Text(record, "bundle") << "\n";
    }
  }
  return 0;
}

int RunIncidentsShow(const IncidentsOptions& options, std::ostream& out, std::ostream& err) {
  std::string path;
  Result<std::vector<json>> records = ReadRecords(options, err, path);
  if (!records) {
    err << "trainwatch incidents: " << records.error().message << "\n";
    return kExitError;
  }
  const json* found = FindOne(*records, options, path, err);
  if (found == nullptr) {
    return kExitError;
  }
  const json& record = *found;
  if (options.json) {
    out << record.dump(2) << "\n";
    return 0;
  }
  out << "incident   " << Text(record, "id") << " (" << Text(record, "kind") << ")\n"
      << "summary    " << Text(record, "summary") << "\n";
  if (record.contains("first_failing_rank")) {
    out << "first      rank " << record["first_failing_rank"].dump()
        << " printed the error its peers' failures followed\n";
  }
  if (record.contains("straggler_rank")) {
    out << "straggler  rank " << record["straggler_rank"].dump()
        << ", the slowest by the job's own report\n";
  }
  out << "opened     " << Text(record, "opened") << "  closed " << Text(record, "closed") << "\n"
      << "verdict    cause " << Text(record, "cause") << ", action " << Text(record, "action")
      << ": " << Text(record, "verdict") << "\n"
      << "state      " << State(record) << "\n"
      << "fingerprint " << Text(record, "fingerprint");
  if (const std::string again = Recurrence(record); !again.empty()) {
    out << " (" << again << ")";
  }
  if (const auto attempt_json = record.find("attempt"); attempt_json != record.end()) {
    if (const std::optional<detect::AttemptPlace> attempt = detect::AttemptOfJson(*attempt_json)) {
      out << "\nattempt    " << Printable(detect::AttemptText(*attempt));
      if (!attempt->why.empty()) {
        out << "\nretry      " << Printable(attempt->why);
      }
    }
  }
  out << "\nfiring lines:\n";
  for (const json& firing : record.value("firings", json::array())) {
    out << "  " << Text(firing, "rule") << " at " << Text(firing, "stream") << ":"
        << firing.value("line", 0) << "  " << Text(firing, "text") << "\n";
    if (!Text(firing, "summary").empty()) {
      out << "    -> " << Text(firing, "summary") << "\n";
    }
  }
  if (record.contains("more_firings")) {
    out << "  (and " << record["more_firings"].dump() << " more)\n";
  }
  for (const json& follow_up : record.value("follow_ups", json::array())) {
    out << "follow-up  " << Text(follow_up, "time") << " " << Text(follow_up, "rule") << " at "
        << Text(follow_up, "stream") << ": " << Text(follow_up, "summary") << " ("
        << Text(follow_up, "why") << ")\n";
  }
  if (!Text(record, "ranks").empty()) {
    out << "ranks      " << Text(record, "ranks") << "\n";
  }
  if (!Text(record, "roster").empty()) {
    out << "roster     " << Text(record, "roster") << "\n";
  }
  if (const auto said = record.find("stacks_say"); said != record.end() && said->is_object()) {
    out << "stacks say " << Text(*said, "says") << " (cause " << Text(*said, "cause") << ", action "
        << Text(*said, "action") << ")\n";
  }
  for (const json& suspect : record.value("suspects", json::array())) {
    out << "suspect    " << Text(suspect, "label") << " (pid " << suspect.value("pid", 0)
        << "): " << Text(suspect, "reason") << "\n";
  }
  if (!Text(record, "devices").empty()) {
    out << "devices    " << Text(record, "devices") << "\n";
  }
  if (record.contains("bundle")) {
    out << "bundle     "
        << (record["bundle"].is_string() ? record["bundle"].get<std::string>()
                                         : "none: " + Text(record, "bundle_error"))
        << "\n";
  } else {
    out << "bundle     not recorded (still capturing, or the daemon stopped first)\n";
  }
  return 0;
}

int RunIncidentsAck(const IncidentsOptions& options, std::ostream& out, std::ostream& err) {
  std::string path;
  Result<std::vector<json>> records = ReadRecords(options, err, path);
  if (!records) {
    err << "trainwatch incidents: " << records.error().message << "\n";
    return kExitError;
  }
  const json* record = FindOne(*records, options, path, err);
  if (record == nullptr) {
    return kExitError;
  }
  const std::string id = Text(*record, "id");
  if (!IsOpenRecord(*record)) {
    err << "trainwatch incidents: incident " << id << " is not open: " << State(*record) << "\n";
    return kExitError;
  }
  if (!options.file.empty()) {
    return AppendAck(*record, options, path, out, err);  // a log of no daemon's
  }
  // The daemon of this config follows its open incidents: it records the ack and stops
  // following it (an ack written behind its back would leave it counted as open).
  Result<config::DaemonConfig> config = LoadCliConfig(options.config_path, err);
  if (!config) {
    err << "trainwatch incidents: " << config.error().message << "\n";
    return kExitError;
  }
  json request = {{"command", "ack"}, {"id", id}};
  if (!options.why.empty()) {
    request["why"] = options.why;
  }
  Result<std::string> response =
      ops::ControlRequest(config->state_dir + "/control.sock", request.dump(), 10);
  if (!response) {
    return AppendAck(*record, options, path, out, err);  // no daemon runs
  }
  const json reply = json::parse(*response, nullptr, /*allow_exceptions=*/false);
  if (reply.is_object() && reply.contains("resolved") && reply["resolved"].is_string()) {
    out << "incident " << id << " resolved: " << Text(reply, "why")
        << " (recorded by the daemon in " << path << ")\n";
    return 0;
  }
  if (reply.is_object() && reply.value("not_followed", false)) {
    return AppendAck(*record, options, path, out, err);
  }
  err << "trainwatch incidents: the daemon says: "
      << (reply.is_object() && reply.contains("error") ? reply["error"].dump() : *response) << "\n";
  return kExitError;
}

}  // namespace trainwatch::cli
