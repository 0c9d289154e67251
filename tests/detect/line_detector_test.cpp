#include "detect/line_detector.h"

#include <gtest/gtest.h>

#include "detect/detector_fixture.h"

namespace trainwatch::detect {
namespace {

constexpr const char* kRules = R"(
  - id: t.oom
    kind: crash
    tags: [train]
    description: OOM
    pattern: 'out of memory'
    examples: {fires: [x], quiet: [y]}
  - id: t.retries
    kind: warning
    tags: [train]
    description: Retries
    threshold: {pattern: 'retrying', count: 3, within: 1m}
    examples: {fires: [x], quiet: [y]}
)";

TEST(LineDetector, PatternEventsCarryLineTextAndKind) {
  const auto events = Detect(kRules, "a\nb\nCUDA out of memory. Tried to allocate\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].rule_id, "t.oom");
  EXPECT_EQ(events[0].kind, rules::RuleKind::kCrash);
  EXPECT_EQ(events[0].line, 3u);
  EXPECT_EQ(events[0].text, "CUDA out of memory. Tried to allocate");
  EXPECT_FALSE(events[0].cut);
}

TEST(LineDetector, ThresholdFiresOncePerCountWithinTheWindow) {
  const auto events =
      Detect(kRules, "retrying\nok\nretrying\nretrying\nretrying\nretrying\nretrying\n");
  ASSERT_EQ(events.size(), 2u);  // the 3rd and the 6th match
  EXPECT_EQ(events[0].line, 4u);
  EXPECT_EQ(events[1].line, 7u);
  EXPECT_EQ(events[0].summary, "3 matches within 60000ms");
}

TEST(LineDetector, ThresholdForgetsMatchesOlderThanTheWindow) {
  rules::LoadedRules loaded;
  rules::LoadRuleText(std::string("rules:\n") + kRules, "t.yaml", loaded);
  auto compiled = rules::CompiledRules::Build(loaded.rules, {"train"}, nullptr);
  auto matcher = rules::LineMatcher::Create(*compiled);
  LineDetector detector(std::move(*matcher));
  std::vector<Event> events;
  TimePoint t;
  for (int i = 0; i < 6; ++i) {
    testing::ForEachBatch(
        "retrying\n", [&](const source::LineBatch& batch) { detector.OnBatch(batch, t, events); });
    t += std::chrono::seconds(45);  // never three within a minute
  }
  EXPECT_TRUE(events.empty());
}

// A rule's group `rank` names the rank the line is about; a spread rule fires on the third
// uneven report in a row and names its slow rank.
TEST(LineDetector, ARankGroupNamesTheRankTheLineIsAbout) {
  constexpr const char* kNamed = R"(
  - id: t.named
    kind: slow
    tags: [train]
    description: N
    pattern: 'Affected ranks: \[(?P<rank>\d+)'
    examples: {fires: [x], quiet: [y]}
  - id: t.spread
    kind: slow
    tags: [train]
    description: S
    spread: {pattern: 'min (?P<low>\d+) max (?P<high>\d+) at (?P<rank>\d+)', above: 1.2, for: 3}
    examples: {fires: [x], quiet: [y]}
)";
  const auto events = Detect(kNamed,
                             "[rank0]: Affected ranks: [12, 4]\n"
                             "min 100 max 150 at 3\nmin 100 max 101 at 2\nmin 100 max 150 at 3\n"
                             "min 100 max 150 at 3\nmin 100 max 160 at 7\n");
  ASSERT_EQ(events.size(), 2U);
  EXPECT_EQ(events[0].rule_id, "t.named");
  EXPECT_EQ(events[0].rank, 12);
  EXPECT_EQ(events[1].rule_id, "t.spread");
  EXPECT_EQ(events[1].line, 6U);
  EXPECT_EQ(events[1].rank, 7);
  EXPECT_EQ(events[1].summary,
            "rank 7 is the slowest at 1.60x the fastest (160 against 100), 3 reports in a row");
  EXPECT_FALSE(Detect(kRules, "CUDA out of memory\n").at(0).rank);
}

TEST(LineDetector, CutLinesAreFlaggedAndStillScanned) {
  const std::string line = std::string(200, '#') + " out of memory " + std::string(200, '#');
  const auto events = Detect(kRules, line + "\n", /*max_line=*/128);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].cut);
  EXPECT_EQ(events[0].line, 1u);
}

TEST(LineDetector, EventTextIsCappedAroundTheMatch) {
  const std::string line = std::string(30000, '#') + " out of memory " + std::string(30000, '#');
  const auto events = Detect(kRules, line + "\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].text.size(), kMaxEventTextBytes);
  EXPECT_NE(events[0].text.find("out of memory"), std::string::npos);
  EXPECT_TRUE(events[0].cut);
}

TEST(LineDetector, TracebackAndPatternEventsTogether) {
  const auto events = Detect(std::string(kRules) + kTracebackRule,
                             "Traceback (most recent call last):\n"
                             "  File \"a.py\", line 1, in <module>\n"
                             "RuntimeError: CUDA out of memory.\n");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].rule_id, "t.oom");  // fires on its line at once
  EXPECT_EQ(events[0].line, 3u);
  EXPECT_EQ(events[1].rule_id, "python.traceback");  // fires when the traceback ends
  EXPECT_EQ(events[1].line, 1u);
  EXPECT_EQ(events[1].summary_line, 3u);
}

}  // namespace
}  // namespace trainwatch::detect
