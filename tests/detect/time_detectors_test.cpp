#include "detect/time_detectors.h"

#include <gtest/gtest.h>

#include <csignal>
#include <string>
#include <vector>

namespace trainwatch::detect {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

const SteadyTime kT0 = SteadyTime{} + std::chrono::hours(100);

rules::Rule RuleOf(std::string id, rules::RuleKind kind, rules::Detector detector) {
  rules::Rule rule;
  rule.id = std::move(id);
  rule.kind = kind;
  rule.detector = std::move(detector);
  return rule;
}

rules::Rule Stall(std::string id, Duration after, Duration grace = Duration(0)) {
  return RuleOf(std::move(id), rules::RuleKind::kHang, rules::ProgressDetector{after, grace});
}

rules::Rule Silence(std::string id, Duration after) {
  return RuleOf(std::move(id), rules::RuleKind::kHang, rules::SilenceDetector{after});
}

rules::Rule Exit(std::string id, std::vector<int> codes, std::vector<int> signals,
                 bool any_nonzero) {
  return RuleOf(std::move(id), rules::RuleKind::kCrash,
                rules::ExitDetector{std::move(codes), std::move(signals), any_nonzero});
}

TEST(StalledBars, FiresOncePerBarAndRuleUntilTheBarAdvances) {
  ProgressTracker progress;
  progress.OnUpdate({"tqdm:train", "train", 41, 100}, 7, "train: 41%", kT0);
  progress.OnUpdate({"tqdm:train", "train", 42, 100}, 8, "train: 42%", kT0 + seconds(1));
  const std::vector<rules::Rule> rules = {Stall("progress.stall", seconds(30)),
                                          Stall("progress.stall_long", minutes(10))};

  EXPECT_TRUE(StalledBars(progress, rules, kT0 + seconds(30)).empty()) << "29 s since advance";
  const std::vector<Event> stalled = StalledBars(progress, rules, kT0 + seconds(31));
  ASSERT_EQ(stalled.size(), 1u) << "only the 30 s rule";
  EXPECT_EQ(stalled[0].rule_id, "progress.stall");
  EXPECT_EQ(stalled[0].kind, rules::RuleKind::kHang);
  EXPECT_EQ(stalled[0].line, 8u);
  EXPECT_EQ(stalled[0].text, "train: 42%");
  EXPECT_EQ(stalled[0].summary, "'train' at 42/100 has not advanced for 30s");
  EXPECT_TRUE(StalledBars(progress, rules, kT0 + seconds(60)).empty()) << "reported once";

  progress.OnUpdate({"tqdm:train", "train", 43, 100}, 9, "train: 43%", kT0 + seconds(61));
  EXPECT_EQ(StalledBars(progress, rules, kT0 + seconds(92)).size(), 1u) << "a new stall";
}

TEST(StalledBars, ABarThatNeverStartedSaysSoAfterItsGrace) {
  ProgressTracker progress;
  progress.OnUpdate({"step", "step", 0, std::nullopt}, 3, "step 0", kT0);
  const std::vector<rules::Rule> rules = {Stall("progress.stall", seconds(30), minutes(45))};
  EXPECT_TRUE(StalledBars(progress, rules, kT0 + minutes(44)).empty()) << "graph compilation";
  const std::vector<Event> stalled = StalledBars(progress, rules, kT0 + minutes(45));
  ASSERT_EQ(stalled.size(), 1u);
  EXPECT_EQ(stalled[0].summary, "'step' at 0 has not started for 2700s");
}

TEST(SilenceWatch, FiresEachRuleOncePerSilence) {
  SilenceWatch watch(kT0);
  const std::vector<rules::Rule> rules = {Silence("silence.short", seconds(60)),
                                          Silence("silence.long", minutes(10))};
  EXPECT_TRUE(watch.Check(rules, "train", kT0 + seconds(59)).empty());
  std::vector<Event> events = watch.Check(rules, "train", kT0 + seconds(60));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].rule_id, "silence.short");
  EXPECT_EQ(events[0].text, "no output from source train for 60s");
  EXPECT_EQ(events[0].summary, events[0].text);
  EXPECT_TRUE(watch.Check(rules, "train", kT0 + seconds(120)).empty()) << "reported once";
  events = watch.Check(rules, "train", kT0 + minutes(10));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].rule_id, "silence.long");
}

TEST(SilenceWatch, ALineEndsTheSilenceARedrawOnlyDelaysIt) {
  SilenceWatch watch(kT0);
  const std::vector<rules::Rule> rules = {Silence("silence", seconds(60))};
  ASSERT_EQ(watch.Check(rules, "train", kT0 + seconds(60)).size(), 1u);

  // A bar redrawn in place: not silent, but the silence already reported is not re-armed.
  watch.OnRedraw(kT0 + seconds(70));
  EXPECT_EQ(watch.last_output(), kT0 + seconds(70));
  EXPECT_TRUE(watch.Check(rules, "train", kT0 + seconds(200)).empty());

  // A whole line: the next silence is a new one.
  watch.OnOutput(kT0 + seconds(300));
  EXPECT_TRUE(watch.Check(rules, "train", kT0 + seconds(359)).empty());
  EXPECT_EQ(watch.Check(rules, "train", kT0 + seconds(360)).size(), 1u);
}

TEST(WriterExited, ABarStillMovingWhenItsWriterVanishedIsACrash) {
  ProgressTracker progress;
  progress.OnUpdate({"tqdm:", "", 10, 100}, 5, "10%|#", kT0);
  progress.OnUpdate({"tqdm:", "", 11, 100}, 6, "11%|#", kT0 + seconds(1));
  const std::vector<source::WriterProcess> gone = {{4242, "python3", "", "", {}, ""},
                                                   {4243, "pt_main_thread", "", "", {}, ""}};
  const std::optional<Event> event = WriterExited(progress, true, gone, kT0 + seconds(2));
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ(event->rule_id, "writer.exited");
  EXPECT_EQ(event->kind, rules::RuleKind::kCrash);
  EXPECT_EQ(event->line, 6u);
  EXPECT_EQ(event->summary,
            "writer exited: 4242 (python3), 4243 (pt_main_thread) stopped with progress bar at "
            "11/100 mid-line, without an error in the log (killed? OOM killer?)");
  EXPECT_TRUE(progress.ended()) << "its job is over either way";
}

TEST(WriterExited, NoCrashWhenTheJobWasDoneOrHadMovedOn) {
  const std::vector<source::WriterProcess> gone = {{4242, "python3", "", "", {}, ""}};
  struct Case {
    const char* why;
    std::int64_t count;
    bool ends_mid_bar;
    SteadyTime now;
  };
  for (const Case& c : std::vector<Case>{
           {"the bar completed", 100, true, kT0 + seconds(2)},
           {"the log does not end mid-bar: other lines came after it, or tqdm's close ended "
            "its line (a normal end, even at 125/100000)",
            50, false, kT0 + seconds(2)},
           {"the bar was last updated too long ago", 50, true,
            kT0 + kWriterExitWindow + seconds(1)},
       }) {
    ProgressTracker progress;
    progress.OnUpdate({"tqdm:", "", c.count, 100}, 6, "bar", kT0);
    EXPECT_FALSE(WriterExited(progress, c.ends_mid_bar, gone, c.now).has_value()) << c.why;
    EXPECT_TRUE(progress.ended()) << c.why;
  }
  ProgressTracker no_bar;
  EXPECT_FALSE(WriterExited(no_bar, true, gone, kT0).has_value()) << "no bar at all";
}

TEST(OomKilledPid, ReadsTheVictimOfTheKernelsOomKiller) {
  EXPECT_EQ(OomKilledPid("Out of memory: Killed process 4242 (python3) total-vm:123kB, "
                         "anon-rss:98kB"),
            4242);
  EXPECT_EQ(OomKilledPid("Memory cgroup out of memory: Killed process 77 (pt_main_thread)"), 77);
  EXPECT_FALSE(OomKilledPid("Killed process 4242 (python3)").has_value()) << "not the OOM killer";
  EXPECT_FALSE(OomKilledPid("Out of memory: Killed process (python3)").has_value());
  EXPECT_FALSE(OomKilledPid("python invoked oom-killer: gfp_mask=0x140cca").has_value());
}

TEST(OomKilledWriter, IsACrashWhateverTheLogShows) {
  ProgressTracker progress;
  progress.OnUpdate({"tqdm:", "", 100, 100}, 6, "100%|#", kT0);  // even a finished bar
  const Event event = OomKilledWriter(progress, 9, {{4242, "python3", "", "", {}, ""}},
                                      "Out of memory: Killed process 4242 (python3)");
  EXPECT_EQ(event.rule_id, "writer.exited");
  EXPECT_EQ(event.kind, rules::RuleKind::kCrash);
  EXPECT_EQ(event.text, "Out of memory: Killed process 4242 (python3)");
  EXPECT_EQ(event.summary,
            "writer killed by the kernel's OOM killer: 4242 (python3) stopped with progress bar "
            "at 100/100");
  EXPECT_TRUE(progress.ended());
}

TEST(ExitEvents, MatchCodesSignalsAndAnyNonzero) {
  const std::vector<rules::Rule> rules = {Exit("exit.oom_killed", {137}, {SIGKILL}, false),
                                          Exit("exit.nonzero", {}, {}, true)};
  struct Case {
    source::ChildEnd end;
    std::vector<std::string> fired;
  };
  for (const Case& c : std::vector<Case>{
           {{0, 0}, {}},
           {{1, 0}, {"exit.nonzero"}},
           {{137, 0}, {"exit.oom_killed", "exit.nonzero"}},
           {{0, SIGKILL}, {"exit.oom_killed", "exit.nonzero"}},
           {{0, SIGTERM}, {"exit.nonzero"}},
       }) {
    std::vector<std::string> fired;
    for (const Event& event : ExitEvents(rules, c.end, "process 7 (python3)")) {
      fired.push_back(event.rule_id);
      EXPECT_EQ(event.summary, "process 7 (python3) " + DescribeEnd(c.end));
    }
    EXPECT_EQ(fired, c.fired) << DescribeEnd(c.end);
  }
}

TEST(ExitEvents, DescribeEndSaysCodeOrSignal) {
  EXPECT_EQ(DescribeEnd({3, 0}), "exited with code 3");
  EXPECT_EQ(DescribeEnd({0, SIGKILL}), "was killed by signal 9 (Killed)");
}

}  // namespace
}  // namespace trainwatch::detect
