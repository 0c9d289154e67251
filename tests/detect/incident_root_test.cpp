// The root of a multi-rank failure: a rank's own error before what its peers suffered from it
// (a gloo "Connection closed by peer") and before the launcher's report of it, whichever rule
// decided first; the first line written first across streams; one stream's lines in order.
#include "detect/incident_root.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "detect/incident_builder.h"

namespace trainwatch::detect {
namespace {

using rules::Role;
using rules::RuleKind;
using std::chrono::seconds;

const WallTime kWall = WallTime{} + seconds(1704164645);

// A line rule's firing at `line` of `stream`, its line read `read_at` seconds in.
Firing Line(const std::string& rule, Role role, std::uint64_t line,
            RuleKind kind = RuleKind::kCrash, const std::string& stream = "/logs/ranks.log",
            int read_at = 0) {
  Firing firing;
  firing.event.rule_id = rule;
  firing.event.kind = kind;
  firing.event.role = role;
  firing.event.line = line;
  firing.event.text = rule + " line";
  firing.source = "train";
  firing.stream = stream;
  firing.first_line_time = kWall + seconds(read_at);
  firing.time = firing.first_line_time + seconds(3);
  return firing;
}

// A traceback from `line` to its exception line `summary_line`, which `summary` is.
Firing Traceback(std::uint64_t line, std::uint64_t summary_line, const std::string& summary,
                 Role role = Role::kPrimary, const std::string& stream = "/logs/ranks.log",
                 int read_at = 0) {
  Firing firing = Line("python.traceback", role, line, RuleKind::kCrash, stream, read_at);
  firing.event.text = "Traceback (most recent call last):";
  firing.event.summary = summary;
  firing.event.summary_line = summary_line;
  firing.event.traceback = true;
  return firing;
}

// Rank 2 raises ValueError; ranks 0, 1 and 3 then fail on gloo, each a traceback whose last
// line the gloo rule also fires on; torchrun reports. In the order the rules decided: the
// line rules at once, the tracebacks after their quiet time.
std::vector<Firing> ValueErrorThenPeers() {
  std::vector<Firing> firings;
  firings.push_back(Line("pytorch.gloo.error", Role::kConsequence, 30));
  firings.push_back(Line("pytorch.gloo.error", Role::kConsequence, 41));
  firings.push_back(Traceback(10, 20, "[rank2]: ValueError: bad batch at step 30"));
  firings.push_back(Traceback(22, 30, "[rank0]: RuntimeError: Connection closed by peer"));
  firings.push_back(Traceback(25, 41, "[rank1]: RuntimeError: Connection closed by peer"));
  firings.push_back(Line("pytorch.elastic.worker_failed", Role::kReport, 60));
  return firings;
}

TEST(IncidentRoot, TheStragglerIsTheRankASlowFiringsLineNames) {
  Incident slow;
  slow.kind = RuleKind::kSlow;
  slow.firings = {Line("slow.pace", Role::kPrimary, 0, RuleKind::kSlow)};
  EXPECT_FALSE(ReportedStraggler(slow)) << "the pace names no rank";
  slow.firings.push_back(Line("megatron.straggler", Role::kPrimary, 40, RuleKind::kSlow));
  slow.firings.back().event.rank = 5;
  EXPECT_EQ(ReportedStraggler(slow), 5);
  // The report joined by a crash: the incident is the crash's, and names no straggler.
  Incident crash = slow;
  crash.kind = RuleKind::kCrash;
  crash.firings.push_back(Line("python.traceback", Role::kPrimary, 41));
  EXPECT_EQ(ReportedStraggler(crash), std::nullopt);
}

TEST(IncidentRoot, ARanksOwnErrorIsTheRootWhateverDecidedFirst) {
  std::vector<Firing> firings = ValueErrorThenPeers();
  MarkConsequentTracebacks(firings);
  EXPECT_EQ(firings[3].event.role, Role::kConsequence) << "its exception line is gloo's";
  EXPECT_EQ(firings[4].event.role, Role::kConsequence);
  EXPECT_EQ(firings[2].event.role, Role::kPrimary) << "rank 2's ValueError is its own";
  const Firing* root = RootFiring(firings);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->event.summary, "[rank2]: ValueError: bad batch at step 30");
  EXPECT_EQ(RootError(firings), root);
}

TEST(IncidentRoot, ATracebackIsMarkedOnlyByTheLineItEndsOnNotByAnotherRanksInterleaved) {
  std::vector<Firing> firings;
  // Rank 2's traceback runs from line 10 to 20; rank 0's gloo error is line 15, between.
  firings.push_back(Traceback(10, 20, "[rank2]: ValueError: bad"));
  firings.push_back(Line("pytorch.gloo.error", Role::kConsequence, 15));
  MarkConsequentTracebacks(firings);
  EXPECT_EQ(firings[0].event.role, Role::kPrimary);
  firings.push_back(Line("pytorch.elastic.child_failed", Role::kReport, 40));
  firings.push_back(
      Traceback(31, 40, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:"));
  MarkConsequentTracebacks(firings);
  EXPECT_EQ(firings[3].event.role, Role::kReport) << "the launcher's traceback reports";
}

TEST(IncidentRoot, WithOnlyConsequencesAndReportsNobodyFailedFirstAndAPeersErrorTellsIt) {
  std::vector<Firing> firings;
  firings.push_back(
      Traceback(5, 15, "torch.multiprocessing.spawn.ProcessRaisedException:", Role::kReport));
  firings.push_back(Line("pytorch.elastic.child_failed", Role::kReport, 15));
  firings.push_back(Traceback(18, 25, "RuntimeError: Timed out waiting 1000ms for recv operation",
                              Role::kConsequence));
  firings.push_back(Line("pytorch.gloo.error", Role::kConsequence, 25));
  const Firing* root = RootFiring(firings);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->event.rule_id, "pytorch.gloo.error") << "a consequence before a report";
  EXPECT_EQ(RootError(firings), nullptr) << "no rank printed an error of its own";
  EXPECT_TRUE(OnlyConsequences(firings));
  // A rank's own error among them, or only a stall: not so.
  std::vector<Firing> with_own = firings;
  with_own.push_back(Line("python.traceback", Role::kPrimary, 30));
  EXPECT_FALSE(OnlyConsequences(with_own));
  EXPECT_FALSE(OnlyConsequences({Line("progress.stall", Role::kPrimary, 3, RuleKind::kHang)}));
}

TEST(IncidentRoot, AStallOrSilenceIsNeverAnErrorAndLosesToAnyCrash) {
  std::vector<Firing> firings;
  firings.push_back(Line("test.stall", Role::kPrimary, 3, RuleKind::kHang));
  EXPECT_EQ(RootFiring(firings)->event.rule_id, "test.stall");
  EXPECT_EQ(RootError(firings), nullptr);
  firings.push_back(Line("pytorch.nccl.watchdog_timeout", Role::kConsequence, 9, RuleKind::kHang));
  firings.push_back(Line("pytorch.gloo.error", Role::kConsequence, 12));
  EXPECT_EQ(RootFiring(firings)->event.rule_id, "pytorch.gloo.error");
}

TEST(IncidentRoot, AcrossStreamsTheFirstLineReadFirstIsFirstNotTheFirstRuleToDecide) {
  std::vector<Firing> firings;
  // Rank 0's line error came first to the daemon, but rank 1's traceback began a second
  // before it (it decided once rank 1 was quiet).
  firings.push_back(
      Line("t.cuda_error", Role::kPrimary, 80, RuleKind::kCrash, "/logs/rank0.log", 2));
  firings.push_back(Traceback(40, 52, "ValueError: bad", Role::kPrimary, "/logs/rank1.log", 1));
  EXPECT_EQ(RootFiring(firings)->stream, "/logs/rank1.log");
  // A device firing outranks them both, whenever it came.
  firings.push_back(Line("t.xid", Role::kPrimary, 0, RuleKind::kDevice, "kmsg", 9));
  EXPECT_EQ(RootFiring(firings)->event.rule_id, "t.xid");
}

TEST(IncidentRoot, TheIncidentsSummaryIsItsRootsAsFiringsArrive) {
  IncidentBuilder builder(
      IncidentSettings{Duration(seconds(2)), Duration(std::chrono::minutes(5))});
  const IncidentBuilder::Clock::time_point t0{std::chrono::hours(100)};
  for (Firing& firing : ValueErrorThenPeers()) {
    builder.Add(std::move(firing), t0);
  }
  const std::optional<Incident> incident = builder.TakeSettled(t0 + seconds(2), kWall);
  ASSERT_TRUE(incident.has_value());
  EXPECT_EQ(incident->summary, "[rank2]: ValueError: bad batch at step 30");
  EXPECT_EQ(incident->kind, RuleKind::kCrash);
}

TEST(IncidentRoot, ARanksOwnErrorAfterTheCapIsFullOfItsPeersErrorsStillTellsTheIncident) {
  IncidentBuilder builder(
      IncidentSettings{Duration(seconds(2)), Duration(std::chrono::minutes(5))});
  const IncidentBuilder::Clock::time_point t0{std::chrono::hours(100)};
  for (std::size_t i = 0; i < IncidentBuilder::kMaxFirings + 3; ++i) {
    builder.Add(Line("pytorch.gloo.error", Role::kConsequence, 100 + i), t0);
  }
  builder.Add(Traceback(10, 20, "[rank2]: ValueError: bad batch at step 30"), t0);
  const std::optional<Incident> incident = builder.TakeSettled(t0 + seconds(2), kWall);
  ASSERT_TRUE(incident.has_value());
  EXPECT_EQ(incident->summary, "[rank2]: ValueError: bad batch at step 30");
  EXPECT_EQ(incident->firings.size(), IncidentBuilder::kMaxFirings);
  EXPECT_EQ(incident->more_firings, 4u);
}

TEST(IncidentRoot, AThresholdOnTheLineAConsequenceFiresOnIsNoTracebackToMark) {
  std::vector<Firing> firings;
  Firing threshold = Line("t.many_errors", Role::kPrimary, 30);
  threshold.event.summary = "5 matching lines within 1m";
  threshold.event.summary_line = 30;  // a threshold's summary is on its own line
  firings.push_back(threshold);
  firings.push_back(Line("pytorch.gloo.error", Role::kConsequence, 30));
  MarkConsequentTracebacks(firings);
  EXPECT_EQ(firings[0].event.role, Role::kPrimary);
}

TEST(IncidentRoot, TheRootDoesNotDependOnTheOrderTheFiringsCameIn) {
  // Two streams: the shared log's rank 2 traceback (lines 10-20, its header read a second in)
  // and a log of its own whose line was read at 2 s; a later line of the shared log read
  // early (an approximate read time) must not make the order circular.
  std::vector<Firing> firings;
  firings.push_back(
      Traceback(10, 20, "[rank2]: ValueError: first", Role::kPrimary, "/logs/ranks.log", 1));
  firings.push_back(
      Line("t.cuda_error", Role::kPrimary, 80, RuleKind::kCrash, "/logs/rank5.log", 2));
  firings.push_back(
      Line("t.cuda_error", Role::kPrimary, 30, RuleKind::kCrash, "/logs/ranks.log", 0));
  firings.push_back(Line("pytorch.gloo.error", Role::kConsequence, 31));
  std::vector<std::size_t> order = {0, 1, 2, 3};
  std::set<std::string> roots;
  do {
    std::vector<Firing> shuffled;
    shuffled.reserve(order.size());
    for (const std::size_t i : order) {
      shuffled.push_back(firings[i]);
    }
    const Firing* root = RootFiring(shuffled);
    roots.insert(root->stream + ":" + std::to_string(root->event.line));
  } while (std::next_permutation(order.begin(), order.end()));
  EXPECT_EQ(roots, (std::set<std::string>{"/logs/ranks.log:10"}))
      << "the shared log's first line, then across streams by read time";
}

}  // namespace
}  // namespace trainwatch::detect
