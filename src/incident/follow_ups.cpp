#include "incident/follow_ups.h"

#include <string>

namespace trainwatch::incident {
namespace {

// "30m", "2h", "45s": as a config writes it.
std::string Spoken(Duration window) {
  const long long ms = window.count();
  if (ms % 3600000 == 0) {
    return std::to_string(ms / 3600000) + "h";
  }
  if (ms % 60000 == 0) {
    return std::to_string(ms / 60000) + "m";
  }
  if (ms % 1000 == 0) {
    return std::to_string(ms / 1000) + "s";
  }
  return std::to_string(ms) + "ms";
}

}  // namespace

void FollowUps::Remember(const detect::Incident& incident, SteadyTime now, Duration window) {
  const bool failure =
      incident.kind == rules::RuleKind::kCrash || incident.kind == rules::RuleKind::kDevice;
  if (window <= Duration::zero() || (!failure && !incident.peer)) {
    return;  // a hang's own incident, a warning, a manual snapshot: nothing to follow up
  }
  Remembered remembered;
  remembered.id = incident.id;
  remembered.kind = incident.peer ? "its peer " + incident.peer->node + "'s " + incident.peer->kind
                                  : std::string(rules::RuleKindName(incident.kind));
  remembered.job_id = incident.job.id;
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
    const std::function<std::string(const detect::Firing&)>& job_of) const {
  if (firing.event.kind != rules::RuleKind::kHang || remembered_.empty()) {
    return std::nullopt;
  }
  std::optional<std::string> job;  // asked once, only when a stream does not decide
  for (const Remembered& remembered : remembered_) {
    if (now > remembered.until) {
      continue;
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
      return Joined{remembered.id, "a hang of the same job within " + Spoken(remembered.window) +
                                       " of " + remembered.kind};
    }
  }
  return std::nullopt;
}

}  // namespace trainwatch::incident
