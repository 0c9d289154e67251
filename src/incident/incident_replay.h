// IncidentReplay: the incidents the daemon would have opened from the lines of logs read at
// once (`trainwatch scan`), made by the daemon's own parts: IncidentBuilder (settle, cooldown,
// the root error that names it, its verdict), FollowUps (a consequence or a launcher's report
// after it was written joins it), the rank a line names, the fingerprint and recurrence.
// Time comes from the lines (detect/line_time.h): a firing line without one takes the time of
// the firing before it in its file, so a log with no times is one moment and its alarms one
// incident. What the daemon learns from processes is not in a log: a writer's death, a stall,
// a caught exception (a bar moving on), a rank from a writer's environment — for which a file
// named for a rank ("rank3.log", "log_rank_3.txt", "worker-3.log") stands in. Single thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/daemon_config.h"
#include "detect/event.h"
#include "detect/incident.h"
#include "detect/incident_builder.h"
#include "incident/follow_ups.h"
#include "ops/recurrence_book.h"

namespace trainwatch::incident {

class IncidentReplay {
 public:
  // Firings kept per file: past this a file's events are counted, not replayed (a log with a
  // million warnings must not hold them all).
  static constexpr std::size_t kMaxFiringsPerFile = 4096;

  struct FollowUp {
    std::string incident_id;
    detect::Firing firing;
    std::string why;
  };
  struct Outcome {
    std::vector<detect::Incident> incidents;  // in the order they opened
    std::vector<FollowUp> follow_ups;
    detect::WallTime start;  // the time given to firings of no time: an opening at it says none
  };

  // `start`: the time of firings in a file that gives none (the scan's start).
  IncidentReplay(const config::IncidentConfig& settings, detect::WallTime start);

  // One file's events in line order, as `scan` found them. `name` is how records name the file
  // (its stream). Files are replayed in the order added where their times tie.
  void AddFile(const std::string& name, const std::vector<detect::Event>& events);
  Outcome Finish();

  // The rank a file's name gives ("rank3.log", "log_rank_3.txt", "worker-3.log"); none for a
  // name that gives none.
  static std::optional<int> RankOfFileName(std::string_view path);

 private:
  struct Pending {
    detect::Firing firing;
    std::size_t file = 0;
  };
  void Record(detect::Incident incident, SteadyTime now);

  config::IncidentConfig settings_;
  detect::WallTime start_;
  std::vector<Pending> pending_;
  std::size_t files_ = 0;
  detect::IncidentBuilder builder_;
  FollowUps follow_ups_;
  ops::RecurrenceBook recurrences_;
  Outcome outcome_;
};

}  // namespace trainwatch::incident
