// `trainwatch incidents list` and `trainwatch incidents show ID`: the incidents recorded in
// <state_dir>/incidents.jsonl, each with its bundle record joined (path, ranks, suspects),
// read from the file alone, so they work with no daemon running.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace trainwatch::cli {

struct IncidentsOptions {
  std::string config_path;  // empty: the default config
  std::string file;         // overrides <state_dir>/incidents.jsonl
  std::string id;           // show: an incident id, or a unique start of one
  bool json = false;
};

// The incident records of a log, oldest first, each with the fields of its bundle record
// (`bundle`, `bundle_error`, `ranks`, `suspects`, `devices`) added. Whole lines only; lines
// that are not JSON objects are skipped. Pure; any thread.
std::vector<nlohmann::ordered_json> ReadIncidentRecords(std::string_view text);

int RunIncidentsList(const IncidentsOptions& options, std::ostream& out, std::ostream& err);
int RunIncidentsShow(const IncidentsOptions& options, std::ostream& out, std::ostream& err);

}  // namespace trainwatch::cli
