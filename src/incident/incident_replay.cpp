#include "incident/incident_replay.h"

#include <re2/re2.h>

#include <algorithm>
#include <chrono>

#include "detect/line_time.h"
#include "incident/firing_rank.h"

namespace trainwatch::incident {
namespace {

// The replay's clock: the lines' own times, on the steady clock the builder counts in.
SteadyTime SteadyOf(detect::WallTime wall) {
  return SteadyTime(std::chrono::duration_cast<SteadyTime::duration>(wall.time_since_epoch()));
}

// The year a glog line's time is read in: the scan's, as glog prints none.
int YearOf(detect::WallTime time) {
  const auto today = std::chrono::floor<std::chrono::days>(time);
  return static_cast<int>(std::chrono::year_month_day(today).year());
}

}  // namespace

IncidentReplay::IncidentReplay(const config::IncidentConfig& settings, detect::WallTime start)
    : settings_(settings), start_(start), builder_({settings.settle, settings.cooldown}) {
  outcome_.start = start;
}

std::optional<int> IncidentReplay::RankOfFileName(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  static const RE2 rank(R"((?i)(?:^|[^a-z])(?:rank|worker|proc)[_-]?(\d{1,5})(?:[^0-9]|$))");
  int found = 0;
  if (RE2::PartialMatch(re2::StringPiece(name.data(), name.size()), rank, &found)) {
    return found;
  }
  return std::nullopt;
}

void IncidentReplay::AddFile(const std::string& name, const std::vector<detect::Event>& events) {
  const std::size_t file = files_++;
  const int year = YearOf(start_);
  const std::optional<int> file_rank = RankOfFileName(name);
  // A firing line without a time takes the time of the one before it; those before the first
  // time the file gives take that first time (else the scan's start: a log with no times).
  std::optional<detect::WallTime> first;
  for (const detect::Event& event : events) {
    if ((first = detect::LineTime(event.text, year))) {
      break;
    }
  }
  detect::WallTime time = first.value_or(start_);
  for (const detect::Event& event : events) {
    if (const std::optional<detect::WallTime> own = detect::LineTime(event.text, year)) {
      time = *own;
    }
    Pending pending;
    pending.file = file;
    pending.firing.event = event;
    pending.firing.source = "scan";
    pending.firing.stream = name;
    pending.firing.time = time;
    pending.firing.first_line_time = time;
    pending.firing.rank = RankOfFiring(pending.firing, nullptr);
    if (!pending.firing.rank) {
      pending.firing.rank = file_rank;
    }
    pending_.push_back(std::move(pending));
  }
}

IncidentReplay::Outcome IncidentReplay::Finish() {
  std::stable_sort(pending_.begin(), pending_.end(), [](const Pending& a, const Pending& b) {
    return a.firing.time != b.firing.time ? a.firing.time < b.firing.time : a.file < b.file;
  });
  for (Pending& pending : pending_) {
    const SteadyTime now = SteadyOf(pending.firing.time);
    if (std::optional<detect::Incident> settled = builder_.TakeSettled(now, pending.firing.time)) {
      Record(std::move(*settled), now);
    }
    // As IncidentFlow::OnFirings: while an incident settles what comes joins it; after it was
    // written, what follows it up (a consequence, a launcher's report) is its follow-up. No job
    // ids in a log: the source decides, and every scanned file is one source.
    if (!builder_.open()) {
      if (std::optional<FollowUps::Joined> joined =
              follow_ups_.Of(pending.firing, now, nullptr, nullptr)) {
        outcome_.follow_ups.push_back(
            {joined->incident_id, std::move(pending.firing), std::move(joined->why)});
        continue;
      }
    }
    builder_.Add(std::move(pending.firing), now);
  }
  pending_.clear();
  if (const std::optional<SteadyTime> at = builder_.SettlesAt()) {
    const auto wall = detect::WallTime(
        std::chrono::duration_cast<detect::WallTime::duration>(at->time_since_epoch()));
    if (std::optional<detect::Incident> settled = builder_.TakeSettled(*at, wall)) {
      Record(std::move(*settled), *at);
    }
  }
  return std::move(outcome_);
}

void IncidentReplay::Record(detect::Incident incident, SteadyTime now) {
  recurrences_.Stamp(incident);
  follow_ups_.Remember(incident, "", /*followed=*/false, now, settings_.follow_up);
  outcome_.incidents.push_back(std::move(incident));
}

}  // namespace trainwatch::incident
