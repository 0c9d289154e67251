#include "detect/incident_builder.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "core/time_format.h"
#include "detect/incident_root.h"

namespace trainwatch::detect {
namespace {

// Crash and device evidence explain a failure better than the hang they cause, and any
// alarm better than a warning: the incident takes the kind of its most telling event.
int Rank(rules::RuleKind kind) {
  switch (kind) {
    case rules::RuleKind::kDevice:
      return 5;
    case rules::RuleKind::kCrash:
      return 4;
    case rules::RuleKind::kDiverged:  // a crash it ends in says more; a stall it causes less
      return 3;
    case rules::RuleKind::kHang:
      return 2;
    case rules::RuleKind::kSlow:  // a job still running: any failure it turns into says more
      return 1;
    case rules::RuleKind::kWarning:
      return 0;
  }
  return 0;
}

std::string SummaryOf(const Event& event) {
  return event.summary.empty() ? event.text : event.summary;
}

}  // namespace

std::string IncidentBuilder::NewId(WallTime wall_now) {
  // Time first so ids sort by time; a random part so ids from two daemons (host and sidecar)
  // or from before a restart never collide.
  static const std::uint32_t run = std::random_device{}() & 0xffff;
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, "-%04x%06x", run, ++sequence_ & 0xffffff);
  return FormatUtc(wall_now, TimeFormat::kCompact) + suffix;
}

IncidentBuilder::Disposition IncidentBuilder::Add(Firing firing, Clock::time_point now) {
  const std::string& rule = firing.event.rule_id;
  if (!open_) {
    if (firing.event.kind == rules::RuleKind::kWarning) {
      return Disposition::kWarningAlone;
    }
    auto last = last_opened_.find(rule);
    if (last != last_opened_.end() && now - last->second < settings_.cooldown) {
      return Disposition::kCoolingDown;
    }
    open_.emplace();
    tally_ = VerdictTally();
    tally_.Add(firing.event);
    open_->id = NewId(firing.time);
    open_->opened = firing.time;
    open_->kind = firing.event.kind;
    open_->summary = SummaryOf(firing.event);
    opened_at_ = now;
    open_->rules.push_back(rule);
    last_opened_[rule] = now;
    open_->firings.push_back(std::move(firing));
    return Disposition::kOpened;
  }
  Incident& incident = *open_;
  tally_.Add(firing.event);
  if (std::find(incident.rules.begin(), incident.rules.end(), rule) == incident.rules.end()) {
    incident.rules.push_back(rule);
  }
  last_opened_[rule] = opened_at_;
  if (incident.firings.size() < kMaxFirings) {
    incident.firings.push_back(std::move(firing));
    MarkConsequentTracebacks(incident.firings);
    Retell();
  } else {
    ++incident.more_firings;
    // Full of what peers suffered: a rank's own error, late as it may come, takes the place
    // of the last of them, or the incident could never be told by it.
    const bool own_error = firing.event.role == rules::Role::kPrimary &&
                           (firing.event.kind == rules::RuleKind::kCrash ||
                            firing.event.kind == rules::RuleKind::kDevice);
    if (own_error && RootError(incident.firings) == nullptr) {
      for (auto it = incident.firings.rbegin(); it != incident.firings.rend(); ++it) {
        if (it->event.role != rules::Role::kPrimary || it->event.kind == rules::RuleKind::kHang ||
            it->event.kind == rules::RuleKind::kWarning) {
          *it = std::move(firing);
          break;
        }
      }
      MarkConsequentTracebacks(incident.firings);
      Retell();
    }
  }
  return Disposition::kJoined;
}

void IncidentBuilder::CrashCaught(const std::string& source, const std::string& stream,
                                  std::uint64_t line) {
  if (!open_) {
    return;
  }
  bool changed = false;
  for (Firing& firing : open_->firings) {
    if (firing.source == source && firing.stream == stream &&
        firing.event.kind == rules::RuleKind::kCrash && firing.event.line <= line) {
      firing.event.kind = rules::RuleKind::kWarning;
      std::string& summary =
          firing.event.summary.empty() ? firing.event.text : firing.event.summary;
      summary += " (caught: the writer went on)";
      changed = true;
    }
  }
  if (changed) {
    Retell();
    tally_ = VerdictTally();  // what is left decides (firings beyond the cap are not known)
    for (const Firing& firing : open_->firings) {
      tally_.Add(firing.event);
    }
  }
}

void IncidentBuilder::Retell() {
  // Its kind is its most telling event's; its summary is its root's (detect/incident_root.h):
  // a rank's own error, not a peer's "Connection closed" that followed it.
  rules::RuleKind kind = rules::RuleKind::kWarning;
  for (const Firing& firing : open_->firings) {
    if (Rank(firing.event.kind) > Rank(kind)) {
      kind = firing.event.kind;
    }
  }
  open_->kind = kind;
  if (const Firing* root = RootFiring(open_->firings)) {
    open_->summary = SummaryOf(root->event);
  }
}

Incident IncidentBuilder::Manual(std::string reason, WallTime wall_now) {
  Incident incident;
  incident.id = NewId(wall_now);
  incident.kind = rules::RuleKind::kWarning;
  incident.summary = "manual snapshot: " + reason;
  incident.reason = std::move(reason);
  incident.rules.push_back("manual.snapshot");
  incident.opened = incident.closed = wall_now;
  return incident;
}

Incident IncidentBuilder::Peer(PeerLink link, WallTime wall_now) {
  Incident incident;
  incident.id = NewId(wall_now);
  incident.kind = rules::RuleKind::kWarning;
  incident.summary = "peer: node " + link.node + "'s incident " + link.incident_id + " (" +
                     link.kind + ": " + link.summary + ")";
  incident.rules.push_back("peer.incident");
  incident.verdict.why = "captured for node " + link.node + "'s incident " + link.incident_id +
                         " (" + link.cause + ", " + link.action +
                         " there); this node's ranks are likely waiting for it";
  incident.peer = std::move(link);
  incident.opened = incident.closed = wall_now;
  return incident;
}

std::optional<Incident> IncidentBuilder::TakeSettled(Clock::time_point now, WallTime wall_now) {
  if (!open_ || now - opened_at_ < settings_.settle) {
    return std::nullopt;
  }
  std::optional<Incident> done = std::move(open_);
  open_.reset();
  done->closed = wall_now;
  done->verdict = tally_.Result();
  return done;
}

std::optional<IncidentBuilder::Clock::time_point> IncidentBuilder::SettlesAt() const {
  if (!open_) {
    return std::nullopt;
  }
  return opened_at_ + settings_.settle;
}

void IncidentBuilder::RestoreCooldown(const std::string& rule, Clock::time_point opened_at) {
  auto& last = last_opened_[rule];
  last = std::max(last, opened_at);
}

void IncidentBuilder::EndCooldown(const std::vector<std::string>& rules) {
  for (const std::string& rule : rules) {
    last_opened_.erase(rule);
  }
}

}  // namespace trainwatch::detect
