// FiringLog: what the daemon's log says of each firing. A firing that opens an incident, or
// joins one whose firing list is not yet full, gets its line; of a run of firings that open
// nothing (a rule in cooldown, a warning alone) only the first does, and the rest are counted
// per rule for `trainwatch status`: a flood of matching lines must not become a flood of log
// lines. Loop thread only.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "detect/incident.h"
#include "detect/incident_builder.h"

namespace trainwatch::ops {

class FiringLog {
 public:
  // What a firing is, said before it is handed to the incident builder.
  struct Said {
    std::string rule;
    std::string where;  // stream[:line]
    std::string what;   // its summary, or the line that fired
  };
  static Said Describe(const detect::Firing& firing);

  // Logs (or counts) a firing the builder disposed of; `open` is the incident open after it.
  void Record(const Said& firing, detect::IncidentBuilder::Disposition disposition,
              const detect::Incident* open);

  // Per rule: firings that opened or joined no incident, since the start.
  const std::map<std::string, std::uint64_t>& quiet_firings() const { return quiet_firings_; }

 private:
  std::map<std::string, std::uint64_t> unlogged_;       // per rule: firings since last logged
  std::map<std::string, std::uint64_t> quiet_firings_;  // per rule: firings opening nothing
};

}  // namespace trainwatch::ops
