#include "detect/progress_tracker.h"

#include <algorithm>

namespace trainwatch::detect {
namespace {

constexpr std::size_t kMaxBarText = 512;

}  // namespace

void ProgressTracker::OnUpdate(const ProgressUpdate& update, std::uint64_t line,
                               std::string_view text, SteadyTime now) {
  auto found = bars_.find(update.key);
  if (found == bars_.end()) {
    if (bars_.size() >= kMaxBars) {
      auto oldest = std::min_element(bars_.begin(), bars_.end(), [](const auto& a, const auto& b) {
        return a.second.last_update < b.second.last_update;
      });
      bars_.erase(oldest);
    }
    Bar bar;
    bar.key = update.key;
    bar.count = update.count;
    bar.first_seen = bar.last_advance = now;
    found = bars_.emplace(update.key, std::move(bar)).first;
  } else if (found->second.count != update.count) {
    Bar& advancing = found->second;
    if (advancing.advanced) {  // the first interval is start-up, not the job's pace
      // A pause no line announced, no other bar covered and no stall rule told, within one
      // job: this job pauses so long (an evaluation or an epoch's end it does not print), and
      // will again. A hang that was told and a restart's downtime are no such pause.
      if (!in_phase_ && !ended_ && advancing.reported.empty()) {
        longest_quiet_ =
            std::max(longest_quiet_, std::chrono::duration_cast<Duration>(now - last_advance_));
      }
      if (advancing.intervals.size() == kIntervals) {
        advancing.intervals.erase(advancing.intervals.begin());
      }
      advancing.intervals.push_back(
          std::chrono::duration_cast<Duration>(now - advancing.last_advance));
    }
    std::deque<Bar::PaceSample>& pace = advancing.pace;
    if (update.count < advancing.count) {
      pace.clear();  // counted from 0 again: another epoch's bar under the same name
    }
    if (pace.empty() || now - pace.back().at >= kPaceEvery) {
      if (pace.size() == kPaceSamples) {
        pace.pop_front();
      }
      pace.push_back({now, update.count});
    }
    found->second.count = update.count;
    found->second.last_advance = now;
    found->second.advanced = true;
    last_advance_ = std::max(last_advance_, now);
    in_phase_ = false;
    found->second.reported.clear();
    last_advance_line_ = std::max(last_advance_line_, line);
  }
  Bar& bar = found->second;
  bar.label = update.label;
  bar.total = update.total;
  bar.complete = update.Complete();
  bar.line = line;
  bar.text.assign(text.substr(0, kMaxBarText));
  bar.last_update = now;
  bar.ended = false;
  ended_ = false;  // output again: a new job writes here
}

void ProgressTracker::EndJob() {
  ended_ = true;
  longest_quiet_ = Duration{0};  // the next job learns its own pauses
  for (auto& [key, bar] : bars_) {
    bar.ended = true;
  }
}

std::optional<Duration> Bar::IntervalP99() const {
  if (intervals.size() < ProgressTracker::kMinIntervals) {
    return std::nullopt;
  }
  std::vector<Duration> sorted = intervals;
  std::sort(sorted.begin(), sorted.end());
  // Nearest rank: the ceil(0.99 n)-th smallest.
  const std::size_t rank = (sorted.size() * 99 + 99) / 100;
  return sorted[rank - 1];
}

void ProgressTracker::OnPhase(SteadyTime now) {
  in_phase_ = true;
  last_phase_ = now;
}

bool ProgressTracker::AnySlow() const {
  return std::any_of(bars_.begin(), bars_.end(),
                     [](const auto& item) { return !item.second.slow.empty(); });
}

std::vector<PaceChange> ProgressTracker::TakePaceChanges(std::size_t rule,
                                                         const rules::PaceDetector& detector,
                                                         SteadyTime now) {
  std::vector<PaceChange> changes;
  for (auto& [key, bar] : bars_) {
    auto told = std::find_if(bar.slow.begin(), bar.slow.end(),
                             [rule](const Bar::SlowSince& since) { return since.rule == rule; });
    if (bar.complete || bar.ended || now - bar.last_advance >= detector.hold / 2) {
      continue;  // finished, or stopping: the stall is the progress rules' to tell
    }
    const std::optional<double> recent =
        StepsPerSecond(bar.pace, now - detector.hold, now, detector.hold / 2);
    if (!recent || *recent <= 0) {
      continue;
    }
    if (told != bar.slow.end()) {
      // Half-way back to the pace it had counts as back: a pace hovering at the threshold is
      // told once.
      if (told->steps_before / *recent < 1 + (detector.slower_by - 1) / 2) {
        changes.push_back({&bar, false, told->steps_before, *recent});
        bar.slow.erase(told);
      }
      continue;
    }
    const std::optional<double> before =
        StepsPerSecond(bar.pace, now - detector.hold - detector.baseline, now - detector.hold,
                       detector.baseline / 2);
    if (before && *before / *recent >= detector.slower_by && now - last_phase_ >= detector.hold) {
      bar.slow.push_back({rule, *before});
      changes.push_back({&bar, true, *before, *recent});
    }
  }
  return changes;
}

std::optional<double> StepsPerSecond(const std::deque<Bar::PaceSample>& samples, SteadyTime from,
                                     SteadyTime to, Duration min_span) {
  // The median of the rates between consecutive samples, not the count over the span: one long
  // gap (an evaluation or a save the log did not announce) is one rate among many, while a job
  // that is really slower is slower between every pair.
  std::vector<double> rates;
  const Bar::PaceSample* first = nullptr;
  const Bar::PaceSample* previous = nullptr;
  // Oldest first: the window's start is found, not walked to (up to kPaceSamples per bar, per
  // rule, at every check).
  const auto start =
      std::lower_bound(samples.begin(), samples.end(), from,
                       [](const Bar::PaceSample& sample, SteadyTime at) { return sample.at < at; });
  for (auto it = start; it != samples.end(); ++it) {
    const Bar::PaceSample& sample = *it;
    if (sample.at > to) {
      break;
    }
    if (previous != nullptr && sample.at > previous->at) {
      rates.push_back(static_cast<double>(sample.count - previous->count) /
                      std::chrono::duration<double>(sample.at - previous->at).count());
    } else if (previous == nullptr) {
      first = &sample;
    }
    previous = &sample;
  }
  if (first == nullptr || previous->at - first->at < min_span || rates.size() < kMinPaceRates) {
    return std::nullopt;
  }
  const auto middle = rates.begin() + static_cast<std::ptrdiff_t>(rates.size() / 2);
  std::nth_element(rates.begin(), middle, rates.end());
  return *middle > 0 ? std::optional<double>(*middle) : std::nullopt;
}

std::vector<StalledBar> ProgressTracker::TakeStalled(std::size_t rule,
                                                     const rules::ProgressDetector& detector,
                                                     SteadyTime now) {
  std::vector<StalledBar> stalled;
  for (auto& [key, bar] : bars_) {
    if (bar.complete || bar.ended ||
        std::find(bar.reported.begin(), bar.reported.end(), rule) != bar.reported.end()) {
      continue;
    }
    if (!bar.advanced) {
      const Duration allowed = std::max(detector.stall_after, detector.startup_grace);
      if (now - bar.last_advance >= allowed) {
        bar.reported.push_back(rule);
        stalled.push_back({&bar, allowed, false});
      }
      continue;
    }
    if (now - bar.last_advance >= detector.stall_after) {
      bar.reported.push_back(rule);
      stalled.push_back({&bar, detector.stall_after, false});
      continue;
    }
    const std::optional<Duration> p99 = bar.IntervalP99();
    if (detector.factor <= 0 || in_phase_ || !p99) {
      continue;
    }
    const auto scaled =
        std::chrono::duration_cast<Duration>(std::chrono::duration<double, Duration::period>(
            static_cast<double>(p99->count()) * detector.factor));
    const auto known_pause =
        std::chrono::duration_cast<Duration>(std::chrono::duration<double, Duration::period>(
            static_cast<double>(longest_quiet_.count()) * kKnownPauseMargin));
    const Duration learned =
        std::clamp(std::max(scaled, known_pause), detector.min, detector.stall_after);
    if (now - std::max(bar.last_advance, last_advance_) >= learned) {
      bar.reported.push_back(rule);
      stalled.push_back({&bar, learned, true});
    }
  }
  return stalled;
}

const Bar* ProgressTracker::Latest() const {
  const Bar* latest = nullptr;
  for (const auto& [key, bar] : bars_) {
    if (latest == nullptr || bar.last_update > latest->last_update) {
      latest = &bar;
    }
  }
  return latest;
}

}  // namespace trainwatch::detect
