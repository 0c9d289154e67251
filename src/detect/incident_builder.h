// IncidentBuilder: groups events into incidents. The first alarm (crash, hang or device
// event) opens an incident; every event arriving within `settle` joins it; when `settle`
// has passed the incident is complete. A rule that opened or joined an incident does not
// open another within `cooldown` of that incident's opening: a crash loop printing the same
// traceback every minute makes one incident per cooldown, not one per minute. Warnings join
// an open incident but never open one. The incident takes its kind and summary from its most
// telling event: device over crash over hang over warning, then a line rule naming the failure over
// a traceback's last line or an exit status, then the earliest. Time comes from the caller. Single
// thread.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/quantity.h"
#include "detect/incident.h"
#include "detect/incident_verdict.h"

namespace trainwatch::detect {

struct IncidentSettings {
  Duration settle{2000};
  Duration cooldown{300000};
};

class IncidentBuilder {
 public:
  static constexpr std::size_t kMaxFirings = 64;
  using Clock = std::chrono::steady_clock;

  explicit IncidentBuilder(IncidentSettings settings) : settings_(settings) {}
  void set_settings(IncidentSettings settings) { settings_ = settings; }

  enum class Disposition { kOpened, kJoined, kCoolingDown, kWarningAlone };
  Disposition Add(Firing firing, Clock::time_point now);
  // A manual snapshot: an incident of its own, complete at once.
  Incident Manual(std::string reason, WallTime wall_now);
  // A peer incident: another node of the job opened `link`'s incident; this node captures its
  // own state for it. Recorded and captured like a manual snapshot, never open, never
  // published (no node answers a peer incident: no cascade).
  Incident Peer(PeerLink link, WallTime wall_now);

  // The writer of `stream` (of config source `source`) went on after the crashes it reported up
  // to `line`: they were caught exceptions. In the open incident they become warnings, and
  // the incident takes its kind and summary from what is left (a warning when nothing else).
  // Decided within `settle`: an incident already written stays as it was.
  void CrashCaught(const std::string& source, const std::string& stream, std::uint64_t line);
  // The open incident once its settle time has passed by `now`.
  std::optional<Incident> TakeSettled(Clock::time_point now, WallTime wall_now);
  // When the open incident settles, if one is open.
  std::optional<Clock::time_point> SettlesAt() const;
  const std::optional<Incident>& open() const { return open_; }

  // A rule that fired `ago` before now (from the incident log, across a restart).
  void RestoreCooldown(const std::string& rule, Clock::time_point opened_at);
  // The incident these rules opened resolved: the next firing opens a new incident at once.
  void EndCooldown(const std::vector<std::string>& rules);

 private:
  std::string NewId(WallTime wall_now);
  // Takes the open incident's kind from its most telling firing and its summary from its root.
  void Retell();

  IncidentSettings settings_;
  std::optional<Incident> open_;
  Clock::time_point opened_at_{};
  std::map<std::string, Clock::time_point> last_opened_;  // per rule
  VerdictTally tally_;                                    // of the open incident's firings
  std::uint32_t sequence_ = 0;
};

}  // namespace trainwatch::detect
