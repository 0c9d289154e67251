// ProgressTracker: the bars of one stream (tqdm, Lightning, HF Trainer, Keras, step lines)
// and when each last advanced, for `progress` rules. A bar advances when its count moves
// (tqdm reprints the same count every 10 s while stuck, so a refresh is not an advance); it
// is stalled when it has not advanced for `stall_after`, or, before its first advance, for
// `startup_grace` (Gaudi graph compilation keeps a bar at 0% for many minutes). A complete
// bar, or any bar once its job has ended, is never stalled. Each stall is reported once,
// until the bar advances again. Bounded: at most kMaxBars bars, the least recently updated
// forgotten first.
// A rule with `factor` learns the job's pace: each bar keeps its last kIntervals intervals
// between advances; once it has kMinIntervals, the stream is stalled after factor x their p99
// (at least `min`, at most `stall_after`) without an advance of any of its bars — an
// evaluation bar moving keeps the training bar's short clock from running — unless the log
// announced a phase (a checkpoint save, an evaluation) since the last advance, which gets the
// full stall_after. The learnt threshold is also never shorter than kKnownPauseMargin x the
// longest pause the stream has made and come back from (one no line announced and no other bar
// covered: an evaluation or an epoch's end it does not print), so the floor `min` can be short
// (30 s) without flagging a job's own recurring pauses. Single thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/quantity.h"
#include "detect/progress_parser.h"
#include "rules/rule.h"

namespace trainwatch::detect {

using SteadyTime = std::chrono::steady_clock::time_point;

struct Bar {
  std::string key;
  std::string label;
  std::int64_t count = 0;
  std::optional<std::int64_t> total;
  std::uint64_t line = 0;  // line of the last update
  std::string text;        // the last update as printed (capped)
  SteadyTime first_seen{};
  SteadyTime last_advance{};  // first_seen until it advances
  SteadyTime last_update{};
  bool advanced = false;
  bool complete = false;
  bool ended = false;                 // its job ended; a later update (a new job) revives it
  std::vector<std::size_t> reported;  // progress rules that reported this stall
  std::vector<Duration> intervals;    // between its last advances, oldest first (kIntervals)
  // Its count over time, for `pace` rules: at most one sample a second (kPaceEvery), the last
  // kPaceSamples, oldest first; started again when the count goes back (a new epoch's bar).
  struct PaceSample {
    SteadyTime at{};
    std::int64_t count = 0;
  };
  std::deque<PaceSample> pace;
  // The pace rules that found it slow and have not seen it recover, each with the pace it had
  // before (steps a second): what its recovery is judged against, however long it stays slow.
  struct SlowSince {
    std::size_t rule = 0;
    double steps_before = 0;
  };
  std::vector<SlowSince> slow;

  // The p99 of `intervals` (nearest rank), once there are kMinIntervals of them.
  std::optional<Duration> IntervalP99() const;
};

// Steps a second over the samples within [from, to]: the median of the rates between
// consecutive samples; none when they span less than `min_span` or give fewer than
// kMinPaceRates rates.
inline constexpr std::size_t kMinPaceRates = 2;
std::optional<double> StepsPerSecond(const std::deque<Bar::PaceSample>& samples, SteadyTime from,
                                     SteadyTime to, Duration min_span);

// A bar found slower than it was, or back to its pace.
struct PaceChange {
  const Bar* bar = nullptr;
  bool slow = false;        // false: its pace came back
  double steps_before = 0;  // per second, over the baseline
  double steps_now = 0;     // per second, over the rule's `for`
};

// A bar found stalled, and the threshold it was held to.
struct StalledBar {
  const Bar* bar = nullptr;
  Duration threshold{0};
  bool learned = false;  // factor x p99 (floored, capped), not the fixed stall_after
};

class ProgressTracker {
 public:
  static constexpr std::size_t kMaxBars = 64;
  static constexpr std::size_t kIntervals = 32;
  static constexpr std::size_t kMinIntervals = 8;
  static constexpr std::chrono::seconds kPaceEvery{1};
  static constexpr std::size_t kPaceSamples = 1800;  // half an hour at one a second
  static constexpr double kKnownPauseMargin = 1.5;

  void OnUpdate(const ProgressUpdate& update, std::uint64_t line, std::string_view text,
                SteadyTime now);
  // The log announced a checkpoint save or an evaluation: until the next advance, no learned
  // threshold applies.
  void OnPhase(SteadyTime now);
  // Bars stalled at `now` under the rule numbered `rule` that it has not reported yet; they
  // count as reported from here on.
  std::vector<StalledBar> TakeStalled(std::size_t rule, const rules::ProgressDetector& detector,
                                      SteadyTime now);
  // Bars whose pace under the pace rule numbered `rule` turned slow, or came back, at `now`
  // (each told once per change). Not while a phase announced lately (a checkpoint save, an
  // evaluation) may explain it, nor for a bar that stopped (a stall is the progress rules').
  std::vector<PaceChange> TakePaceChanges(std::size_t rule, const rules::PaceDetector& detector,
                                          SteadyTime now);
  // Whether a pace rule holds one of its bars slow now.
  bool AnySlow() const;
  // The job behind this stream ended: its bars are finished, whatever they show. Bars a
  // later job prints are tracked anew.
  void EndJob();
  bool ended() const { return ended_; }
  // The line of the latest advance of a bar already known (0 before any): a writer that goes on
  // after an exception shows it here.
  std::uint64_t last_advance_line() const { return last_advance_line_; }
  // When any of its bars last advanced (the epoch before any did).
  SteadyTime last_advance() const { return last_advance_; }
  // The bar updated most recently, if any.
  const Bar* Latest() const;
  // The longest pause this stream's job made and came back from, unannounced and not told as a
  // stall (zero: none yet; a job that ends takes it along).
  Duration longest_quiet() const { return longest_quiet_; }
  const std::map<std::string, Bar>& bars() const { return bars_; }

 private:
  std::map<std::string, Bar> bars_;
  bool ended_ = false;
  std::uint64_t last_advance_line_ = 0;
  SteadyTime last_advance_{};  // of any bar
  bool in_phase_ = false;      // a phase was announced since the last advance
  SteadyTime last_phase_{};    // when one was last announced
  Duration longest_quiet_{0};  // see longest_quiet()
};

}  // namespace trainwatch::detect
