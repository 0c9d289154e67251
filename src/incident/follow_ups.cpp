#include "incident/follow_ups.h"

#include <string>

#include "core/quantity.h"

namespace trainwatch::incident {

void FollowUps::Remember(const detect::Incident& incident, std::string job_id, bool followed,
                         SteadyTime now, Duration window) {
  const bool failure =
      incident.kind == rules::RuleKind::kCrash || incident.kind == rules::RuleKind::kDevice;
  if (window <= Duration::zero() || (!failure && !incident.peer)) {
    return;  // a hang's own incident, a warning, a manual snapshot: nothing to follow up
  }
  Remembered remembered;
  remembered.id = incident.id;
  remembered.kind = incident.peer ? "its peer " + incident.peer->node + "'s " + incident.peer->kind
                                  : std::string(rules::RuleKindName(incident.kind));
  remembered.job_id = std::move(job_id);
  remembered.followed = followed;
  for (const detect::Firing& firing : incident.firings) {
    remembered.streams.insert(firing.source + "\n" + firing.stream);
    remembered.sources.insert(firing.source);
  }
  remembered.until = now + window;
  remembered.window = window;
  remembered_.push_front(std::move(remembered));
  if (remembered_.size() > kMaxRemembered) {
    remembered_.pop_back();
  }
}

std::optional<FollowUps::Joined> FollowUps::Of(
    const detect::Firing& firing, SteadyTime now,
    const std::function<std::string(const detect::Firing&)>& job_of,
    const std::function<bool(const std::string& id)>& still_open) const {
  // What follows a failure: its hang, what the other ranks suffered from it, the launcher's
  // report of it. A rank's own error is a failure of its own, always.
  const bool alarm = rules::IsAlarm(firing.event.kind);
  const char* what = firing.event.kind == rules::RuleKind::kHang      ? "a hang"
                     : firing.event.role == rules::Role::kConsequence ? "a consequence"
                     : firing.event.role == rules::Role::kReport      ? "a launcher's report"
                                                                      : nullptr;
  if (!alarm || what == nullptr || remembered_.empty()) {
    return std::nullopt;
  }
  std::optional<std::string> job;  // asked once, only when a stream does not decide
  for (const Remembered& remembered : remembered_) {
    if (now > remembered.until) {
      continue;
    }
    if (remembered.followed && still_open && !still_open(remembered.id)) {
      continue;  // resolved since (the job made progress, or restarted): a new hang is new
    }
    bool same = remembered.streams.contains(firing.source + "\n" + firing.stream);
    if (!same) {
      if (!job) {
        job = job_of ? job_of(firing) : std::string();
      }
      same = !remembered.job_id.empty() && !job->empty()
                 ? *job == remembered.job_id
                 : remembered.job_id.empty() && job->empty() &&
                       remembered.sources.contains(firing.source);
    }
    if (same) {
      return Joined{remembered.id, std::string(what) + " of the same job within " +
                                       FormatDuration(remembered.window) + " of " +
                                       remembered.kind};
    }
  }
  return std::nullopt;
}

}  // namespace trainwatch::incident
