#include "detect/progress_tracker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <string>
#include <vector>

namespace trainwatch::detect {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

const SteadyTime kT0 = SteadyTime{} + std::chrono::hours(100);
constexpr Duration kStallAfter = seconds(30);
constexpr Duration kNoGrace = Duration(0);
constexpr std::size_t kRule = 0;

ProgressUpdate Update(const std::string& key, std::int64_t count,
                      std::optional<std::int64_t> total = 100) {
  return ProgressUpdate{key, "label of " + key, count, total};
}

// The keys of the bars TakeStalled reports, in its order.
std::vector<std::string> Stalled(ProgressTracker& tracker, SteadyTime now,
                                 Duration stall_after = kStallAfter,
                                 Duration startup_grace = kNoGrace, std::size_t rule = kRule) {
  std::vector<std::string> keys;
  rules::ProgressDetector detector;
  detector.stall_after = stall_after;
  detector.startup_grace = startup_grace;
  for (const StalledBar& stalled : tracker.TakeStalled(rule, detector, now)) {
    keys.push_back(stalled.bar->key);
  }
  return keys;
}

// A learning rule: 10 x the p99 interval, at least 1 min, at most 10 min.
std::vector<StalledBar> LearntStalls(ProgressTracker& tracker, SteadyTime now) {
  rules::ProgressDetector detector;
  detector.stall_after = minutes(10);
  detector.startup_grace = minutes(45);
  detector.factor = 10;
  detector.min = minutes(1);
  return tracker.TakeStalled(kRule, detector, now);
}

// Advances `key` from count 1 every `step` for `steps` steps from `start`; the time after.
SteadyTime Advance(ProgressTracker& tracker, const std::string& key, SteadyTime start,
                   Duration step, int steps) {
  SteadyTime now = start;
  for (int i = 1; i <= steps; ++i) {
    tracker.OnUpdate(Update(key, i, std::nullopt), static_cast<std::uint64_t>(i), "bar", now);
    now += step;
  }
  return now - step;
}

using Keys = std::vector<std::string>;

TEST(ProgressTracker, AOneSecondStepJobIsFlaggedInAMinuteNotTen) {
  ProgressTracker tracker;
  const SteadyTime last = Advance(tracker, "tqdm:", kT0, seconds(1), 40);
  EXPECT_EQ(tracker.bars().at("tqdm:").IntervalP99(), Duration(seconds(1)));
  EXPECT_TRUE(LearntStalls(tracker, last + seconds(59)).empty());
  const std::vector<StalledBar> stalled = LearntStalls(tracker, last + seconds(60));
  ASSERT_EQ(stalled.size(), 1u);
  EXPECT_TRUE(stalled[0].learned);
  EXPECT_EQ(stalled[0].threshold, Duration(minutes(1)));  // 10 x 1 s, floored at 1 min
}

TEST(ProgressTracker, AFourMinuteStepJobIsNotFlaggedBeforeTheCap) {
  ProgressTracker tracker;
  const SteadyTime last = Advance(tracker, "step:", kT0, minutes(4), 12);
  EXPECT_TRUE(LearntStalls(tracker, last + minutes(9)).empty());
  const std::vector<StalledBar> stalled = LearntStalls(tracker, last + minutes(10));
  ASSERT_EQ(stalled.size(), 1u);
  EXPECT_FALSE(stalled[0].learned) << "40 min learnt, capped by stall_after";
}

TEST(ProgressTracker, TooFewIntervalsLearnNothing) {
  ProgressTracker tracker;
  const SteadyTime last =
      Advance(tracker, "tqdm:", kT0, seconds(1), ProgressTracker::kMinIntervals);
  EXPECT_FALSE(tracker.bars().at("tqdm:").IntervalP99().has_value());
  EXPECT_TRUE(LearntStalls(tracker, last + minutes(5)).empty());
}

TEST(ProgressTracker, AnAnnouncedCheckpointOrAnotherBarMovingHoldsTheLearntClock) {
  ProgressTracker tracker;
  SteadyTime last = Advance(tracker, "tqdm:Train", kT0, seconds(1), 40);
  // An evaluation bar moves while the training bar stands.
  tracker.OnUpdate(Update("tqdm:Eval", 1), 100, "eval", last + seconds(30));
  tracker.OnUpdate(Update("tqdm:Eval", 2), 101, "eval", last + seconds(80));
  EXPECT_TRUE(LearntStalls(tracker, last + seconds(100)).empty());
  // A checkpoint save: the full stall_after, until the next advance.
  last = Advance(tracker, "tqdm:Train", last + seconds(120), seconds(1), 41);
  tracker.OnPhase(last);
  EXPECT_TRUE(LearntStalls(tracker, last + minutes(5)).empty());
  const std::vector<StalledBar> stalled = LearntStalls(tracker, last + minutes(10));
  EXPECT_TRUE(std::any_of(stalled.begin(), stalled.end(), [](const StalledBar& bar) {
    return bar.bar->key == "tqdm:Train" && !bar.learned;
  }));
}

// Issue 31, item 6: the shipped floor is 30 s. A steady job that stops is flagged then; one
// that has paused 40 s before (an evaluation it does not print) and came back is held to
// 1.5 x that pause, and an announced pause teaches nothing.
TEST(ProgressTracker, AKnownUnannouncedPauseHoldsTheLearntClockAndAnAnnouncedOneDoesNot) {
  rules::ProgressDetector detector;
  detector.stall_after = minutes(10);
  detector.factor = 10;
  detector.min = seconds(30);
  ProgressTracker steady;
  const SteadyTime stopped = Advance(steady, "step:", kT0, milliseconds(60), 200);
  EXPECT_TRUE(steady.TakeStalled(kRule, detector, stopped + seconds(29)).empty());
  EXPECT_EQ(steady.TakeStalled(kRule, detector, stopped + seconds(30)).size(), 1u);

  ProgressTracker pausing;
  SteadyTime last = Advance(pausing, "step:", kT0, milliseconds(60), 200);
  pausing.OnUpdate(Update("step:", 201, std::nullopt), 201, "bar", last + seconds(40));
  EXPECT_EQ(pausing.longest_quiet(), Duration(seconds(40)));
  // Steady again: the p99 of its last intervals forgets the pause within 2 s; the tracker not.
  for (int step = 202; step < 300; ++step) {
    last = kT0 + seconds(60) + milliseconds(60) * step;
    pausing.OnUpdate(Update("step:", step, std::nullopt), static_cast<std::uint64_t>(step), "bar",
                     last);
  }
  EXPECT_EQ(pausing.bars().at("step:").IntervalP99(), Duration(milliseconds(60)));
  EXPECT_TRUE(pausing.TakeStalled(kRule, detector, last + seconds(59)).empty());
  const std::vector<StalledBar> stalled = pausing.TakeStalled(kRule, detector, last + seconds(60));
  ASSERT_EQ(stalled.size(), 1u);
  EXPECT_EQ(stalled[0].threshold, Duration(seconds(60)));

  ProgressTracker announced;
  last = Advance(announced, "step:", kT0, milliseconds(60), 200);
  announced.OnPhase(last + seconds(1));  // "Saving checkpoint ..."
  announced.OnUpdate(Update("step:", 201, std::nullopt), 201, "bar", last + seconds(40));
  EXPECT_EQ(announced.longest_quiet(), Duration(milliseconds(60))) << "its steps, not the save";

  // A stall that was told, and a job's end and the next job's start, teach nothing either.
  ProgressTracker told;
  last = Advance(told, "step:", kT0, milliseconds(60), 200);
  ASSERT_EQ(told.TakeStalled(kRule, detector, last + seconds(45)).size(), 1u);
  told.OnUpdate(Update("step:", 201, std::nullopt), 201, "bar", last + seconds(50));
  EXPECT_EQ(told.longest_quiet(), Duration(milliseconds(60)));
  told.EndJob();
  EXPECT_EQ(told.longest_quiet(), Duration(0));
  told.OnUpdate(Update("step:", 1, std::nullopt), 202, "bar", last + minutes(20));
  EXPECT_EQ(told.longest_quiet(), Duration(0));
}

TEST(ProgressTracker, FirstUpdateRecordsTheBar) {
  ProgressTracker tracker;
  tracker.OnUpdate(ProgressUpdate{"tqdm:Epoch #", "Epoch 3", 5, 10}, 42, "Epoch 3: 50%|#####", kT0);
  ASSERT_EQ(tracker.bars().size(), 1u);
  const Bar& bar = tracker.bars().at("tqdm:Epoch #");
  EXPECT_EQ(bar.key, "tqdm:Epoch #");
  EXPECT_EQ(bar.label, "Epoch 3");
  EXPECT_EQ(bar.count, 5);
  EXPECT_EQ(bar.total, 10);
  EXPECT_EQ(bar.line, 42u);
  EXPECT_EQ(bar.text, "Epoch 3: 50%|#####");
  EXPECT_EQ(bar.first_seen, kT0);
  EXPECT_EQ(bar.last_advance, kT0);
  EXPECT_EQ(bar.last_update, kT0);
  EXPECT_FALSE(bar.advanced);
  EXPECT_FALSE(bar.complete);
}

TEST(ProgressTracker, BarTextIsCapped) {
  ProgressTracker tracker;
  const std::string huge(100000, '#');
  tracker.OnUpdate(Update("tqdm:", 1), 1, huge, kT0);
  const std::string& text = tracker.bars().at("tqdm:").text;
  EXPECT_LT(text.size(), 4096u);
  EXPECT_TRUE(huge.starts_with(text));
}

TEST(ProgressTracker, AdvancingBarIsNotStalled) {
  ProgressTracker tracker;
  for (int i = 0; i <= 10; ++i) {
    tracker.OnUpdate(Update("tqdm:", i), 1, "", kT0 + i * seconds(20));
    EXPECT_EQ(Stalled(tracker, kT0 + i * seconds(20) + seconds(29)), Keys{}) << i;
  }
  const Bar& bar = tracker.bars().at("tqdm:");
  EXPECT_TRUE(bar.advanced);
  EXPECT_EQ(bar.count, 10);
  EXPECT_EQ(bar.last_advance, kT0 + seconds(200));
}

TEST(ProgressTracker, StoppedBarIsStalledAfterStallAfterNotBefore) {
  ProgressTracker tracker;
  tracker.OnUpdate(Update("tqdm:", 1), 1, "", kT0);
  tracker.OnUpdate(Update("tqdm:", 2), 1, "", kT0 + seconds(1));
  const SteadyTime due = kT0 + seconds(1) + kStallAfter;
  EXPECT_EQ(Stalled(tracker, due - milliseconds(1)), Keys{});
  EXPECT_EQ(Stalled(tracker, due), Keys{"tqdm:"});
  EXPECT_EQ(tracker.bars().at("tqdm:").reported, std::vector<std::size_t>{kRule});
}

TEST(ProgressTracker, StallIsReportedOnceUntilTheBarAdvancesAndStopsAgain) {
  ProgressTracker tracker;
  tracker.OnUpdate(Update("tqdm:", 1), 1, "", kT0);
  tracker.OnUpdate(Update("tqdm:", 2), 1, "", kT0 + seconds(1));
  EXPECT_EQ(Stalled(tracker, kT0 + seconds(40)), Keys{"tqdm:"});
  EXPECT_EQ(Stalled(tracker, kT0 + seconds(41)), Keys{});
  EXPECT_EQ(Stalled(tracker, kT0 + minutes(60)), Keys{});

  // A refresh of the same count is no advance: still not reported again.
  tracker.OnUpdate(Update("tqdm:", 2), 2, "", kT0 + minutes(61));
  EXPECT_EQ(Stalled(tracker, kT0 + minutes(62)), Keys{});

  const SteadyTime moved = kT0 + minutes(63);
  tracker.OnUpdate(Update("tqdm:", 3), 3, "", moved);
  EXPECT_TRUE(tracker.bars().at("tqdm:").reported.empty());
  EXPECT_EQ(Stalled(tracker, moved + kStallAfter - milliseconds(1)), Keys{});
  EXPECT_EQ(Stalled(tracker, moved + kStallAfter), Keys{"tqdm:"});
  EXPECT_EQ(Stalled(tracker, moved + 2 * kStallAfter), Keys{});
}

struct GraceCase {
  Duration stall_after;
  Duration startup_grace;
  Duration allowed;  // how long a bar that never advanced may sit still
};

TEST(ProgressTracker, BeforeTheFirstAdvanceTheLongerOfGraceAndStallAfterApplies) {
  for (const GraceCase& c : {GraceCase{seconds(30), minutes(10), minutes(10)},
                             GraceCase{seconds(30), seconds(10), seconds(30)},
                             GraceCase{seconds(30), kNoGrace, seconds(30)}}) {
    ProgressTracker tracker;
    tracker.OnUpdate(Update("tqdm:", 0), 1, "", kT0);
    // Refreshes of 0% while the graph compiles.
    tracker.OnUpdate(Update("tqdm:", 0), 1, "", kT0 + seconds(5));
    EXPECT_EQ(Stalled(tracker, kT0 + c.allowed - milliseconds(1), c.stall_after, c.startup_grace),
              Keys{})
        << c.startup_grace.count();
    EXPECT_EQ(Stalled(tracker, kT0 + c.allowed, c.stall_after, c.startup_grace), Keys{"tqdm:"})
        << c.startup_grace.count();
    EXPECT_FALSE(tracker.bars().at("tqdm:").advanced);
  }
}

TEST(ProgressTracker, OnceAdvancedGraceNoLongerApplies) {
  ProgressTracker tracker;
  tracker.OnUpdate(Update("tqdm:", 0), 1, "", kT0);
  tracker.OnUpdate(Update("tqdm:", 1), 1, "", kT0 + minutes(5));
  EXPECT_EQ(Stalled(tracker, kT0 + minutes(5) + kStallAfter, kStallAfter, minutes(10)),
            Keys{"tqdm:"});
}

TEST(ProgressTracker, ReprintingTheSameCountIsNotAnAdvance) {
  ProgressTracker tracker;
  tracker.OnUpdate(Update("tqdm:", 4), 1, "", kT0);
  tracker.OnUpdate(Update("tqdm:", 5), 1, "", kT0 + seconds(1));
  for (int i = 1; i <= 3; ++i) {  // tqdm's refresh every 10 s while stuck
    tracker.OnUpdate(Update("tqdm:", 5), 1 + i, "", kT0 + seconds(1) + i * seconds(10));
  }
  const Bar& bar = tracker.bars().at("tqdm:");
  EXPECT_EQ(bar.last_advance, kT0 + seconds(1));
  EXPECT_EQ(bar.last_update, kT0 + seconds(31));
  EXPECT_EQ(bar.line, 4u);
  EXPECT_EQ(Stalled(tracker, kT0 + seconds(31)), Keys{"tqdm:"});
}

TEST(ProgressTracker, ACountGoingBackIsAnAdvance) {
  // "Epoch 0" and "Epoch 1" share a key; the count restarts each epoch.
  ProgressTracker tracker;
  tracker.OnUpdate(Update("tqdm:Epoch #", 100), 1, "", kT0);
  tracker.OnUpdate(Update("tqdm:Epoch #", 0), 2, "", kT0 + seconds(20));
  EXPECT_EQ(tracker.bars().at("tqdm:Epoch #").last_advance, kT0 + seconds(20));
  EXPECT_EQ(Stalled(tracker, kT0 + seconds(49)), Keys{});
}

TEST(ProgressTracker, CompleteBarIsNeverStalled) {
  ProgressTracker tracker;
  tracker.OnUpdate(Update("tqdm:done", 99), 1, "", kT0);
  tracker.OnUpdate(Update("tqdm:done", 100), 1, "", kT0 + seconds(1));
  tracker.OnUpdate(Update("tqdm:no total", 7, std::nullopt), 2, "", kT0 + seconds(1));
  EXPECT_TRUE(tracker.bars().at("tqdm:done").complete);
  EXPECT_FALSE(tracker.bars().at("tqdm:no total").complete);
  EXPECT_EQ(Stalled(tracker, kT0 + std::chrono::hours(24), kStallAfter, minutes(10)),
            Keys{"tqdm:no total"});
}

TEST(ProgressTracker, EndJobStopsEveryStallAndANewUpdateLiftsIt) {
  ProgressTracker tracker;
  tracker.OnUpdate(Update("tqdm:a", 1), 1, "", kT0);
  tracker.OnUpdate(Update("tqdm:a", 2), 1, "", kT0 + seconds(1));
  EXPECT_FALSE(tracker.ended());
  tracker.EndJob();
  EXPECT_TRUE(tracker.ended());
  EXPECT_EQ(Stalled(tracker, kT0 + minutes(30)), Keys{});

  // The next job writes: its bars are watched again.
  tracker.OnUpdate(Update("tqdm:a", 0), 2, "", kT0 + minutes(31));
  EXPECT_FALSE(tracker.ended());
  EXPECT_EQ(Stalled(tracker, kT0 + minutes(31) + kStallAfter), Keys{"tqdm:a"});
}

TEST(ProgressTracker, BarsOfAnEndedJobStayFinishedWhenTheNextJobWrites) {
  ProgressTracker tracker;
  tracker.OnUpdate(Update("tqdm:[rank7]: Epoch #", 1), 1, "", kT0);
  tracker.OnUpdate(Update("tqdm:[rank7]: Epoch #", 2), 1, "", kT0 + seconds(1));
  tracker.EndJob();  // killed at 2%; the header: any bar once its job has ended is not stalled

  const SteadyTime next_job = kT0 + minutes(20);
  tracker.OnUpdate(Update("tqdm:[rank0]: Epoch #", 0), 2, "", next_job);
  tracker.OnUpdate(Update("tqdm:[rank0]: Epoch #", 1), 3, "", next_job + seconds(1));
  EXPECT_EQ(Stalled(tracker, next_job + seconds(2)), Keys{});
}

TEST(ProgressTracker, EachRuleReportsAStallOnItsOwn) {
  ProgressTracker tracker;
  tracker.OnUpdate(Update("tqdm:", 1), 1, "", kT0);
  tracker.OnUpdate(Update("tqdm:", 2), 1, "", kT0 + seconds(1));
  const SteadyTime start = kT0 + seconds(1);
  // Rule 0 warns after 30 s, rule 1 raises a hang after 5 min.
  EXPECT_EQ(Stalled(tracker, start + seconds(30), seconds(30), kNoGrace, 0), Keys{"tqdm:"});
  EXPECT_EQ(Stalled(tracker, start + seconds(30), minutes(5), kNoGrace, 1), Keys{});
  EXPECT_EQ(Stalled(tracker, start + minutes(5), seconds(30), kNoGrace, 0), Keys{});
  EXPECT_EQ(Stalled(tracker, start + minutes(5), minutes(5), kNoGrace, 1), Keys{"tqdm:"});
  EXPECT_EQ(tracker.bars().at("tqdm:").reported, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(Stalled(tracker, start + minutes(6), minutes(5), kNoGrace, 1), Keys{});
}

TEST(ProgressTracker, EachBarStallsOnItsOwn) {
  ProgressTracker tracker;
  for (const char* key : {"tqdm:[rank0]: ", "tqdm:[rank1]: "}) {
    tracker.OnUpdate(Update(key, 1), 1, "", kT0);
  }
  for (int i = 1; i <= 6; ++i) {  // only rank 0 moves
    tracker.OnUpdate(Update("tqdm:[rank0]: ", 1 + i), 1, "", kT0 + i * seconds(10));
  }
  EXPECT_EQ(Stalled(tracker, kT0 + seconds(60)), Keys{"tqdm:[rank1]: "});
}

TEST(ProgressTracker, KeepsAtMostMaxBarsForgettingTheLeastRecentlyUpdated) {
  ProgressTracker tracker;
  auto key = [](std::size_t i) { return "step:" + std::to_string(i); };
  for (std::size_t i = 0; i < ProgressTracker::kMaxBars; ++i) {
    tracker.OnUpdate(Update(key(i), 1), i, "", kT0 + seconds(i));
  }
  ASSERT_EQ(tracker.bars().size(), ProgressTracker::kMaxBars);
  // Bar 0 is updated again: bar 1 becomes the least recently updated.
  tracker.OnUpdate(Update(key(0), 2), 100, "", kT0 + seconds(100));
  tracker.OnUpdate(Update("step:new", 1), 101, "", kT0 + seconds(101));

  EXPECT_EQ(tracker.bars().size(), ProgressTracker::kMaxBars);
  EXPECT_EQ(tracker.bars().count(key(1)), 0u);
  EXPECT_EQ(tracker.bars().count(key(0)), 1u);
  EXPECT_EQ(tracker.bars().count(key(2)), 1u);
  EXPECT_EQ(tracker.bars().count("step:new"), 1u);

  // Updating a known bar forgets nothing.
  tracker.OnUpdate(Update(key(2), 5), 102, "", kT0 + seconds(102));
  EXPECT_EQ(tracker.bars().size(), ProgressTracker::kMaxBars);
  EXPECT_EQ(tracker.bars().count(key(3)), 1u);
}

TEST(ProgressTracker, LatestIsTheBarUpdatedLast) {
  ProgressTracker tracker;
  EXPECT_EQ(tracker.Latest(), nullptr);
  tracker.OnUpdate(Update("tqdm:b", 1), 1, "", kT0);
  tracker.OnUpdate(Update("tqdm:a", 1), 2, "", kT0 + seconds(1));
  ASSERT_NE(tracker.Latest(), nullptr);
  EXPECT_EQ(tracker.Latest()->key, "tqdm:a");
  tracker.OnUpdate(Update("tqdm:b", 1), 3, "", kT0 + seconds(2));  // a refresh counts
  EXPECT_EQ(tracker.Latest()->key, "tqdm:b");
  EXPECT_EQ(tracker.Latest()->line, 3u);
}

}  // namespace
}  // namespace trainwatch::detect

namespace trainwatch::detect {
namespace {

// A pace rule: 1.5 times slower over the last minute than over the 5 minutes before.
rules::PaceDetector Pace() {
  rules::PaceDetector pace;
  pace.slower_by = 1.5;
  pace.hold = minutes(1);
  pace.baseline = minutes(5);
  return pace;
}

// Advances `key` one step every `step` from `from` for `duration`, asking the pace rule after
// each advance; what it said, in order ("slow 10.0 -> 5.0", "back 10.0 -> 9.0").
std::vector<std::string> Advance(ProgressTracker& tracker, std::int64_t& count, SteadyTime& now,
                                 Duration step, Duration duration,
                                 rules::PaceDetector pace = Pace()) {
  std::vector<std::string> said;
  for (const SteadyTime end = now + duration; now < end; now += step) {
    tracker.OnUpdate(Update("train", ++count, 1000000), 1, "bar", now);
    for (const PaceChange& change : tracker.TakePaceChanges(kRule, pace, now)) {
      char text[64];
      std::snprintf(text, sizeof text, "%s %.1f -> %.1f", change.slow ? "slow" : "back",
                    change.steps_before, change.steps_now);
      said.emplace_back(text);
    }
  }
  return said;
}

TEST(ProgressPace, ABarTwiceAsSlowAsItsOwnPaceIsToldOnceAndItsRecoveryOnce) {
  ProgressTracker tracker;
  std::int64_t count = 0;
  SteadyTime now = kT0;
  EXPECT_TRUE(Advance(tracker, count, now, milliseconds(100), minutes(10)).empty())
      << "a steady pace";
  std::vector<std::string> said = Advance(tracker, count, now, milliseconds(200), minutes(3));
  ASSERT_EQ(said.size(), 1u) << ::testing::PrintToString(said);
  EXPECT_EQ(said[0].substr(0, 10), "slow 10.0 ") << said[0];
  EXPECT_TRUE(tracker.AnySlow());
  // Slow for longer than the baseline: still judged against the pace it had.
  EXPECT_TRUE(Advance(tracker, count, now, milliseconds(200), minutes(6)).empty());
  said = Advance(tracker, count, now, milliseconds(100), minutes(2));
  ASSERT_EQ(said.size(), 1u) << ::testing::PrintToString(said);
  EXPECT_EQ(said[0].substr(0, 10), "back 10.0 ") << said[0];
  EXPECT_FALSE(tracker.AnySlow());
}

TEST(ProgressPace, NoiseBelowTheRatioAPhaseAndAStopAreNoSlowdown) {
  ProgressTracker tracker;
  std::int64_t count = 0;
  SteadyTime now = kT0;
  Advance(tracker, count, now, milliseconds(100), minutes(6));
  // 1.3 times slower: under the rule's 1.5.
  EXPECT_TRUE(Advance(tracker, count, now, milliseconds(130), minutes(3)).empty());
  // A checkpoint save announced: what follows within the rule's `for` is not judged.
  ProgressTracker saving;
  count = 0;
  now = kT0;
  Advance(saving, count, now, milliseconds(100), minutes(6));
  saving.OnPhase(now);
  EXPECT_TRUE(Advance(saving, count, now, milliseconds(300), seconds(50)).empty());
  // A bar that stops is the progress rules' stall, not a slowdown.
  EXPECT_TRUE(saving.TakePaceChanges(kRule, Pace(), now + minutes(2)).empty());
}

// An evaluation the log did not announce: the bar stops 40 s, then goes on at its pace. One
// long gap among many steady intervals is no slowdown.
TEST(ProgressPace, OneLongGapAmongSteadyStepsIsNoSlowdown) {
  ProgressTracker tracker;
  std::int64_t count = 0;
  SteadyTime now = kT0;
  Advance(tracker, count, now, milliseconds(100), minutes(6));
  now += seconds(40);
  EXPECT_TRUE(Advance(tracker, count, now, milliseconds(100), minutes(3)).empty());
}

TEST(ProgressPace, StepsPerSecondNeedsTheSpanAsked) {
  std::deque<Bar::PaceSample> samples;
  for (int i = 0; i <= 10; ++i) {
    samples.push_back({kT0 + seconds(i), i * 5});
  }
  EXPECT_DOUBLE_EQ(*StepsPerSecond(samples, kT0, kT0 + seconds(10), seconds(5)), 5.0);
  EXPECT_DOUBLE_EQ(*StepsPerSecond(samples, kT0 + seconds(5), kT0 + seconds(8), seconds(2)), 5.0);
  EXPECT_FALSE(StepsPerSecond(samples, kT0 + seconds(6), kT0 + seconds(7), seconds(1)))
      << "one rate is too few";
  EXPECT_FALSE(StepsPerSecond(samples, kT0 + seconds(8), kT0 + seconds(20), seconds(5)));
}

}  // namespace
}  // namespace trainwatch::detect
