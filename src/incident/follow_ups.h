// FollowUps: one failure, one incident. A job that crashed (or whose device failed, or whose
// peer on another node failed) often hangs next — its surviving ranks wait in a collective for
// the rank that is gone — or its other ranks and its launcher report the failure after the
// incident settled: that stall, silence, "Connection closed by peer" or launcher's report is
// the same failure, not a second one. It joins the incident as a follow-up record, with no
// second capture pausing every rank again.
// Kept: the last kMaxRemembered crash, device and peer incidents, each for the config's
// incident.follow_up window. Loop thread only.
#pragma once

#include <deque>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "core/env.h"
#include "core/quantity.h"
#include "detect/incident.h"

namespace trainwatch::incident {

class FollowUps {
 public:
  static constexpr std::size_t kMaxRemembered = 8;

  // What a hang joins, and why, in words for the record and the log.
  struct Joined {
    std::string incident_id;
    std::string why;  // "a hang of the same job within 30m of its crash"
  };

  // A recorded incident a later hang may follow up; only crash, device and peer incidents
  // are. `job_id`: the job its own firings' writers name (not a guess from other processes);
  // `followed`: the daemon follows it until it resolves (a peer's incident it does not).
  void Remember(const detect::Incident& incident, std::string job_id, bool followed, SteadyTime now,
                Duration window);
  // The incident `firing` follows up, when it is a hang, a consequence or a launcher's report
  // (never a rank's own error) of the job of one remembered within its window and, for one
  // the daemon follows, `still_open`: its stream, its job (by id, `job_of` of the firing), or,
  // where neither knows a job id, its source.
  std::optional<Joined> Of(const detect::Firing& firing, SteadyTime now,
                           const std::function<std::string(const detect::Firing&)>& job_of,
                           const std::function<bool(const std::string& id)>& still_open) const;

 private:
  struct Remembered {
    std::string id;
    std::string kind;  // "crash", "device", "peer's crash", ...
    std::string job_id;
    bool followed = false;
    std::set<std::string> streams;  // "source\nstream"
    std::set<std::string> sources;
    SteadyTime until{};
    Duration window{0};
  };
  std::deque<Remembered> remembered_;  // newest first
};

}  // namespace trainwatch::incident
