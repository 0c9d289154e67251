// `trainwatch incidents list`, `show ID` and `ack ID`: the incidents recorded in
// <state_dir>/incidents.jsonl, each with its bundle record (path, ranks, suspects) and its
// resolution joined, read from the file alone, so they work with no daemon running. `ack`
// resolves an open incident: through the running daemon, which then stops following it, or,
// with none running (or one that does not follow it), by appending the record itself.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace trainwatch::cli {

struct IncidentsOptions {
  std::string config_path;  // empty: the default config
  std::string file;         // overrides <state_dir>/incidents.jsonl
  std::string id;           // show, ack: an incident id, or a unique start of one
  std::string why;          // ack: the operator's note
  std::chrono::system_clock::time_point now{};  // ack: when it was given (the caller's clock)
  bool json = false;
};

// The incident records of a log, oldest first, each with the fields of its bundle record
// (`bundle`, `bundle_error`, `ranks`, `suspects`, `devices`) and its resolution (`resolved`:
// {how, why, at}) added. Whole lines only; lines that are not JSON objects are skipped. Pure;
// any thread.
std::vector<nlohmann::ordered_json> ReadIncidentRecords(std::string_view text);

int RunIncidentsList(const IncidentsOptions& options, std::ostream& out, std::ostream& err);
int RunIncidentsShow(const IncidentsOptions& options, std::ostream& out, std::ostream& err);
// Exit 0 when recorded; 2 when the incident is not in the log, ambiguous, or resolved already.
int RunIncidentsAck(const IncidentsOptions& options, std::ostream& out, std::ostream& err);

}  // namespace trainwatch::cli
