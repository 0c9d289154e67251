#include "ops/attempt_ledger.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string_view>

#include "detect/attempt_text.h"

namespace trainwatch::ops {
namespace {

bool Intersect(const std::vector<int>& a, const std::vector<int>& b) {
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    if (*i == *j) {
      return true;
    }
    if (*i < *j) {
      ++i;
    } else {
      ++j;
    }
  }
  return false;
}

// Whether `next` is the same run of the job's processes as `latest`. Not proven the same is a
// new attempt: a launcher that says nothing and pids that are unknown make every failure one.
bool SameRun(const detect::AttemptPlace& latest, const detect::AttemptPlace& next) {
  if (!latest.boot_id.empty() && !next.boot_id.empty() && latest.boot_id != next.boot_id) {
    return false;  // a reboot ends every process
  }
  const bool markers = !latest.marker.empty() && !next.marker.empty();
  if (markers && latest.marker != next.marker) {
    return false;
  }
  if (!latest.pids.empty() && !next.pids.empty()) {
    // A fresh run of a launcher counts from 0 again: its processes tell it apart.
    return Intersect(latest.pids, next.pids);
  }
  return markers;
}

// The further of two steps; the later one where they count different bars.
std::optional<detect::JobStep> Further(const std::optional<detect::JobStep>& earlier,
                                       const std::optional<detect::JobStep>& later) {
  if (!earlier) {
    return later;
  }
  if (!later) {
    return earlier;
  }
  return earlier->label == later->label && earlier->count > later->count ? earlier : later;
}

}  // namespace

std::optional<AttemptEntry> AttemptEntryOf(const nlohmann::ordered_json& record) {
  const auto attempt = record.find("attempt");
  if (attempt == record.end() || !attempt->is_object()) {
    return std::nullopt;
  }
  auto text = [](const nlohmann::ordered_json& object, const char* key) {
    const auto found = object.find(key);
    return found != object.end() && found->is_string() ? found->get<std::string>() : std::string();
  };
  std::optional<detect::AttemptPlace> place = detect::AttemptOfJson(*attempt);
  if (!place) {
    return std::nullopt;
  }
  AttemptEntry entry;
  entry.place = std::move(*place);
  if (const auto job = record.find("job"); job != record.end() && job->is_object()) {
    entry.job_id = text(*job, "id");
  }
  entry.incident_id = text(record, "id");
  entry.kind = text(record, "kind");
  entry.fingerprint = text(record, "fingerprint");
  entry.cause = rules::ParseCause(text(record, "cause")).value_or(rules::Cause::kUnknown);
  const std::string action = text(record, "action");
  entry.action = action == "restart_storm"
                     ? rules::Action::kRestartStorm
                     : rules::ParseAction(action).value_or(rules::Action::kInspect);
  if (const auto opened = record.find("opened_ms");
      opened != record.end() && opened->is_number_integer()) {
    entry.opened = detect::WallTime{} + std::chrono::milliseconds(opened->get<std::int64_t>());
  }
  return entry;
}

bool EndsAttempt(const std::string& kind) {
  return kind == "crash" || kind == "hang" || kind == "device" || kind == "diverged";
}

void AttemptLedger::Restore(const std::vector<AttemptEntry>& entries) {
  jobs_.clear();
  for (const AttemptEntry& entry : entries) {
    Add(entry);
  }
}

detect::AttemptPlace AttemptLedger::Place(const std::string& job_id,
                                          detect::AttemptPlace place) const {
  auto found = jobs_.find(job_id);
  if (found == jobs_.end() || found->second.empty()) {
    place.number = 1;
    return place;
  }
  const AttemptEntry& latest = found->second.back();
  place.number = SameRun(latest.place, place) ? latest.place.number : latest.place.number + 1;
  return place;
}

std::vector<AttemptEntry> AttemptLedger::Before(const std::string& job_id,
                                                std::uint32_t number) const {
  std::vector<AttemptEntry> before;
  auto found = jobs_.find(job_id);
  if (found != jobs_.end()) {
    std::copy_if(found->second.begin(), found->second.end(), std::back_inserter(before),
                 [&](const AttemptEntry& entry) { return entry.place.number < number; });
  }
  return before;
}

void AttemptLedger::Add(const AttemptEntry& entry) {
  std::vector<AttemptEntry>& attempts = jobs_[entry.job_id];
  if (!attempts.empty() && attempts.back().place.number == entry.place.number) {
    AttemptEntry& same = attempts.back();
    const std::optional<detect::JobStep> step = Further(same.place.step, entry.place.step);
    std::vector<int> pids;
    std::set_union(same.place.pids.begin(), same.place.pids.end(), entry.place.pids.begin(),
                   entry.place.pids.end(), std::back_inserter(pids));
    const bool failed_first = same.place.failed_first || entry.place.failed_first;
    // What ended the attempt stays its failure: a slowdown or a peer's capture before it does not.
    if (EndsAttempt(entry.kind) || !EndsAttempt(same.kind)) {
      same = entry;
    }
    same.place.step = step;
    pids.resize(std::min(pids.size(), kMaxPids));
    same.place.pids = std::move(pids);
    same.place.failed_first = failed_first;
  } else {
    attempts.push_back(entry);
    if (attempts.size() > kMaxAttempts) {
      attempts.erase(attempts.begin());
    }
  }
  if (jobs_.size() > kMaxJobs) {
    auto quietest = std::min_element(jobs_.begin(), jobs_.end(), [](const auto& a, const auto& b) {
      return a.second.back().opened < b.second.back().opened;
    });
    jobs_.erase(quietest);
  }
}

std::vector<AttemptEntry> AttemptLedger::Of(const std::string& job_id) const {
  auto found = jobs_.find(job_id);
  return found == jobs_.end() ? std::vector<AttemptEntry>{} : found->second;
}

}  // namespace trainwatch::ops
