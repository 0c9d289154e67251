#include "ops/uncaptured_incidents.h"

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

namespace trainwatch::ops {

using json = nlohmann::json;

std::vector<UncapturedIncident> FindUncapturedIncidents(const std::string& path,
                                                        std::size_t tail_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return {};
  }
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::size_t>(in.tellg());
  const std::size_t start = size > tail_bytes ? size - tail_bytes : 0;
  in.seekg(static_cast<std::streamoff>(start));
  std::string line;
  if (start > 0) {
    std::getline(in, line);  // most likely the end of a line cut in two: skip it
  }
  std::vector<UncapturedIncident> wanting;  // in the order they were written
  std::map<std::string, bool> interrupted;  // by id: whether the last bundle record says so
  while (std::getline(in, line)) {
    const json record = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!record.is_object()) {
      continue;
    }
    if (record.contains("bundle_for") && record["bundle_for"].is_string()) {
      const json& error = record.contains("error") ? record["error"] : json();
      interrupted[record["bundle_for"].get<std::string>()] =
          error.is_string() && error.get<std::string>() == kInterruptedCapture;
      continue;
    }
    if (!record.contains("firings") || !record["id"].is_string()) {
      continue;
    }
    // A warning gets no bundle (nor a bundle record), unless asked for by hand.
    if (record.value("kind", "") == "warning" && !record.contains("reason")) {
      continue;
    }
    wanting.push_back(
        {record["id"].get<std::string>(), record.value("summary", ""), record.value("opened", "")});
  }
  std::vector<UncapturedIncident> uncaptured;
  for (UncapturedIncident& incident : wanting) {
    const auto found = interrupted.find(incident.id);
    if (found == interrupted.end() || found->second) {
      uncaptured.push_back(std::move(incident));
    }
  }
  return uncaptured;
}

}  // namespace trainwatch::ops
