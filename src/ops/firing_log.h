// FiringLog: what the daemon's log says of each firing. A firing that opens an incident gets
// its line. Of a run of firings of one rule that join an incident (while it settles, or as
// follow-ups after), or that open nothing (a rule in cooldown, a warning alone), the first
// gets its line, and the run is then said again, with its count and its first and last line,
// when it reaches 10, 100, 1000... firings: a flood of matching lines must not become a flood
// of log lines. Quiet firings are counted per rule for `trainwatch status`. Loop thread only.
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
  // Logs (or counts) a firing that joined the written incident `incident_id` as a follow-up.
  void FollowedUp(const std::string& incident_id, const Said& firing, const std::string& why);

  // Per rule: firings that opened or joined no incident, since the start.
  const std::map<std::string, std::uint64_t>& quiet_firings() const { return quiet_firings_; }

 private:
  // A run of one rule's firings said once: how many, and where the first and last were.
  struct Run {
    std::uint64_t count = 0;
    std::string first;
    std::string last;
  };
  // Counts `firing` into `run`; true when the run is to be said again (at 10, 100, ...).
  static bool Counted(Run& run, const Said& firing);
  static constexpr std::size_t kMaxRuns = 1024;  // joined runs remembered (incidents x rules)

  std::map<std::string, Run> quiet_runs_;  // per rule: the run opening nothing under way
  std::map<std::pair<std::string, std::string>, Run> joined_runs_;  // per (incident, rule)
  std::map<std::string, std::uint64_t> quiet_firings_;  // per rule: firings opening nothing
};

}  // namespace trainwatch::ops
