#include "diagnose/suspects.h"

#include <gtest/gtest.h>

namespace trainwatch::diagnose {
namespace {

using collect::StackFrame;

const std::vector<StackFrame> kAllReduce = {
    {"wait", "", 0},
    {"all_reduce", "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", 1541},
    {"step", "/job/train.py", 88},
    {"<module>", "/job/train.py", 120}};
const std::vector<StackFrame> kSleep = {
    {"sleep", "", 0}, {"next_batch", "/job/data.py", 41}, {"step", "/job/train.py", 80}};

JobClues FirstError(int rank) {
  JobClues clues;
  clues.first_error_rank = rank;
  return clues;
}

JobClues WithProgress(std::vector<RankProgress> progress) {
  JobClues clues;
  clues.progress = std::move(progress);
  return clues;
}

RankState Rank(int rank, std::vector<StackFrame> python, double cpu = 0) {
  return {"rank " + std::to_string(rank),
          rank,
          100 + rank,
          true,
          std::move(python),
          {},
          cpu,
          "",
          {},
          {}};
}

TEST(DescribeStack, NamesTheCallTheJobsOwnCodeMakes) {
  EXPECT_EQ(DescribeStack(kAllReduce, {}), "all_reduce at train.py:88");
  EXPECT_EQ(DescribeStack(kSleep, {}), "sleep at data.py:41");
  EXPECT_EQ(DescribeStack({{"spin", "/job/train.py", 5}}, {}), "in spin at train.py:5");
  EXPECT_EQ(DescribeStack({}, {{"__futex_wait", "", 0}, {"ncclGroupEnd", "", 0}}),
            "ncclGroupEnd (native)");
  EXPECT_EQ(DescribeStack({}, {}), "no stack");
  EXPECT_TRUE(InCollective(kAllReduce, {}));
  EXPECT_FALSE(InCollective(kSleep, {}));
  EXPECT_TRUE(InCollective({}, {{"gloo::transport::tcp::Pair::recv", "", 0}}));
}

TEST(Diagnose, NamesTheRankOutsideTheCollective) {
  const RankDiagnosis diagnosis =
      Diagnose({Rank(0, kAllReduce), Rank(1, kAllReduce), Rank(2, kAllReduce), Rank(3, kSleep)});
  ASSERT_EQ(diagnosis.groups.size(), 2u);
  EXPECT_EQ(diagnosis.Summary(),
            "ranks 0-2: all_reduce at train.py:88; rank 3: sleep at data.py:41");
  ASSERT_EQ(diagnosis.suspects.size(), 1u);
  EXPECT_EQ(diagnosis.suspects[0].rank, 3);
  EXPECT_EQ(diagnosis.suspects[0].pid, 103);
  EXPECT_EQ(diagnosis.suspects[0].reason,
            "not inside a collective (sleep at data.py:41) while ranks 0-2 wait in all_reduce at "
            "train.py:88");
}

TEST(Diagnose, TheRankTheJobsOwnReportNamesIsASuspect) {
  JobClues clues;
  clues.reported_straggler = 1;
  const RankDiagnosis diagnosis =
      Diagnose({Rank(0, kAllReduce), Rank(1, kAllReduce), Rank(2, kAllReduce)}, clues);
  ASSERT_EQ(diagnosis.suspects.size(), 1U);
  EXPECT_EQ(diagnosis.suspects[0].rank, 1);
  EXPECT_EQ(diagnosis.suspects[0].reason, "the job's own straggler report names it the slowest");
}

TEST(Diagnose, NamesABusyRankAmongIdlePeersAndAnExitedOne) {
  std::vector<RankState> ranks = {Rank(0, kAllReduce, 1), Rank(1, kAllReduce, 0),
                                  Rank(2, kAllReduce, 99)};
  RankDiagnosis diagnosis = Diagnose(ranks);
  ASSERT_EQ(diagnosis.suspects.size(), 1u);
  EXPECT_EQ(diagnosis.suspects[0].reason, "busy (99% CPU) while its peers are idle");
  ranks[2].alive = false;
  diagnosis = Diagnose(ranks);
  ASSERT_EQ(diagnosis.suspects.size(), 1u);
  EXPECT_EQ(diagnosis.suspects[0].reason, "exited while its peers ran on");
  EXPECT_EQ(diagnosis.Summary(), "ranks 0, 1: all_reduce at train.py:88; rank 2: exited");
}

// The two-node job's failure on node1: rank 3 raised and exited, rank 2 (its only peer on
// this node) was busy printing its own "Connection closed by peer" when sampled. Busy beside
// no live peer is not busier than anyone.
TEST(Diagnose, ABusyRankWhosePeersAllExitedIsNoSuspectForIt) {
  std::vector<RankState> ranks = {Rank(2, kAllReduce, 53), Rank(3, {})};
  ranks[1].alive = false;
  ranks[1].exit_cause = "exit code 1";
  const RankDiagnosis diagnosis = Diagnose(ranks, FirstError(3));
  ASSERT_EQ(diagnosis.suspects.size(), 1u);
  EXPECT_EQ(diagnosis.suspects[0].rank, 3);
  // With one live idle peer beside it, the same rank is busy among idle peers.
  ranks.push_back(Rank(1, kAllReduce, 0));
  EXPECT_EQ(Diagnose(ranks, FirstError(3)).suspects.size(), 2u);
}

TEST(Diagnose, AnExitIsEvidenceOnlyWhenPeersRanOnAndNoOtherRankFailedFirst) {
  // Rank 2 raised; rank 1 then failed on its account ("Connection closed by peer") and exited.
  std::vector<RankState> ranks = {Rank(0, kAllReduce), Rank(1, {}), Rank(2, {})};
  ranks[1].alive = false;
  ranks[1].exit_cause = "exit code 1";
  ranks[2].alive = false;
  ranks[2].exit_cause = "exit code 1";
  RankDiagnosis diagnosis = Diagnose(ranks, FirstError(2));
  ASSERT_EQ(diagnosis.suspects.size(), 1u);
  EXPECT_EQ(diagnosis.suspects[0].rank, 2);
  EXPECT_EQ(diagnosis.suspects[0].reason,
            "exited while its peers ran on (exit code 1); the first to print an error");
  // Stopped by the launcher after the failure: still a consequence. Killed by the OOM killer:
  // evidence of its own.
  ranks[1].exit_cause = "killed by signal 15 (SIGTERM)";
  EXPECT_EQ(Diagnose(ranks, FirstError(2)).suspects.size(), 1u);
  // Aborted in teardown after rank 2's error (two_node_ranks.py's rank 2 on node1 did, its
  // "terminate called" beside gloo's "Connection closed by peer"): a consequence too.
  ranks[1].exit_cause = "killed by signal 6 (SIGABRT)";
  EXPECT_EQ(Diagnose(ranks, FirstError(2)).suspects.size(), 1u);
  ranks[1].exit_cause = "killed by the kernel's OOM killer (signal 9)";
  diagnosis = Diagnose(ranks, FirstError(2));
  ASSERT_EQ(diagnosis.suspects.size(), 2u);
  EXPECT_EQ(diagnosis.suspects[0].rank, 1);
  // Every rank gone: the exits tell no one apart; the first error still does.
  ranks[0].alive = false;
  diagnosis = Diagnose(ranks, FirstError(2));
  ASSERT_EQ(diagnosis.suspects.size(), 1u);
  EXPECT_EQ(diagnosis.suspects[0].reason, "the first to print an error");
}

TEST(Diagnose, RanksThatPrintedOnlyAnothersFailureNameNoOneHere) {
  // Rank 0 exited on gloo's "Connection closed by peer", rank 1 is tearing down: the failure
  // was a rank's on another node.
  std::vector<RankState> ranks = {Rank(0, {}), Rank(1, kSleep)};
  ranks[0].alive = false;
  JobClues clues;
  clues.consequences_only = true;
  EXPECT_TRUE(Diagnose(ranks, clues).suspects.empty());
  EXPECT_FALSE(Diagnose(ranks).suspects.empty()) << "without the clue the exit would count";
}

TEST(Diagnose, NoSuspectWhenEveryRankIsInTheSamePlace) {
  EXPECT_TRUE(Diagnose({Rank(0, kAllReduce), Rank(1, kAllReduce)}).suspects.empty());
  // Stacks differ but no majority and no collective: nobody to blame.
  EXPECT_TRUE(Diagnose({Rank(0, kSleep), Rank(1, {{"f", "/job/a.py", 1}})}).suspects.empty());
}

TEST(Diagnose, NamesTheFirstRankToPrintAnError) {
  const RankDiagnosis diagnosis =
      Diagnose({Rank(0, kAllReduce), Rank(1, kAllReduce), Rank(2, kAllReduce)}, FirstError(1));
  ASSERT_EQ(diagnosis.suspects.size(), 1u);
  EXPECT_EQ(diagnosis.suspects[0].rank, 1);
  EXPECT_EQ(diagnosis.suspects[0].reason, "the first to print an error");
}

const std::vector<RankState> kFourWaiting = {Rank(0, kAllReduce), Rank(1, kAllReduce),
                                             Rank(2, kAllReduce), Rank(3, kAllReduce)};

RankProgress Prefixed(int rank, std::int64_t count) {
  return {rank, {}, "tqdm:[rank" + std::to_string(rank) + "]: Epoch #", count, std::nullopt};
}

TEST(Diagnose, NamesTheRankBehindItsPeersProgress) {
  const RankDiagnosis diagnosis = Diagnose(
      kFourWaiting,
      WithProgress({Prefixed(0, 120), Prefixed(1, 120), Prefixed(2, 119), Prefixed(3, 120)}));
  ASSERT_EQ(diagnosis.suspects.size(), 1u);
  EXPECT_EQ(diagnosis.suspects[0].rank, 2);
  EXPECT_EQ(diagnosis.suspects[0].reason, "behind its peers (at 119 while 3 of them reached 120)");
}

TEST(Diagnose, NamesTheLastRankToMakeProgressFromItsLogFile) {
  // One log file per rank: the bars carry no prefix; the stream's writers say whose it is (the
  // launcher holding the file too is no rank).
  const RankDiagnosis diagnosis = Diagnose(
      kFourWaiting, WithProgress({{std::nullopt, {100, 7}, "tqdm:Epoch #", 40, std::nullopt},
                                  {std::nullopt, {101, 7}, "tqdm:Epoch #", 40, std::nullopt},
                                  {std::nullopt, {102, 7}, "tqdm:Epoch #", 42, std::nullopt},
                                  {std::nullopt, {103, 7}, "tqdm:Epoch #", 40, std::nullopt}}));
  ASSERT_EQ(diagnosis.suspects.size(), 1u);
  EXPECT_EQ(diagnosis.suspects[0].rank, 2);
  EXPECT_EQ(diagnosis.suspects[0].reason,
            "the last to make progress (at 42 while 3 of its peers stopped at 40)");
}

TEST(Diagnose, ProgressThatCannotBeTiedToOneRankOrIsEvenNamesNobody) {
  // A stream both ranks write; one bar per rank at the same count; a single rank's bar.
  EXPECT_TRUE(
      Diagnose(kFourWaiting, WithProgress({{std::nullopt, {100, 101}, "tqdm:", 3, std::nullopt},
                                           {std::nullopt, {102}, "tqdm:", 9, std::nullopt}}))
          .suspects.empty());
  EXPECT_TRUE(Diagnose(kFourWaiting, WithProgress({Prefixed(0, 5), Prefixed(1, 5), Prefixed(2, 5),
                                                   Prefixed(3, 5)}))
                  .suspects.empty());
  EXPECT_TRUE(Diagnose(kFourWaiting, WithProgress({Prefixed(1, 5)})).suspects.empty());
}

TEST(Diagnose, OfTwoRanksAtDifferentCountsTheOneAheadIsNamed) {
  const RankDiagnosis diagnosis = Diagnose({Rank(0, kAllReduce), Rank(1, kAllReduce)},
                                           WithProgress({Prefixed(0, 10), Prefixed(1, 12)}));
  ASSERT_EQ(diagnosis.suspects.size(), 1u);
  EXPECT_EQ(diagnosis.suspects[0].rank, 1);
  EXPECT_EQ(diagnosis.suspects[0].reason,
            "the last to make progress (at 12 while its peers stopped sooner)");
}

// When each rank's bar last moved decides who stopped first, before counts: a rank whose bar
// stopped well before all its peers' is named; last advances close together are a tie.
TEST(Diagnose, TheRankWhoseBarStoppedWellBeforeItsPeersIsTheFirstToStopAndATieNamesNobody) {
  auto bar = [](int rank, std::int64_t count, double since) {
    return RankProgress{rank, {}, "tqdm:[rank" + std::to_string(rank) + "]: Epoch #", count, since};
  };
  // Rank 3 stopped 40 s before the others, which moved within a second of each other; its
  // count is the same as theirs (another bar cadence), which the counts could not tell.
  RankDiagnosis diagnosis = Diagnose(
      kFourWaiting,
      WithProgress({bar(0, 40, 12.0), bar(1, 40, 12.5), bar(2, 40, 11.8), bar(3, 40, 52.0)}));
  ASSERT_EQ(diagnosis.suspects.size(), 1u);
  EXPECT_EQ(diagnosis.suspects[0].rank, 3);
  EXPECT_EQ(diagnosis.suspects[0].reason,
            "the first to stop (its bar last moved 40 s before any peer's, at 40)");
  // Counts that differ but times that tie: nobody (a slower printing cadence is not a stop).
  diagnosis = Diagnose(kFourWaiting, WithProgress({bar(0, 40, 12.0), bar(1, 40, 13.0),
                                                   bar(2, 42, 11.0), bar(3, 40, 14.0)}));
  EXPECT_TRUE(diagnosis.suspects.empty()) << diagnosis.suspects[0].reason;
  // Peers spread over 20 s: a rank 15 s before the earliest of them is within the spread.
  diagnosis = Diagnose(kFourWaiting, WithProgress({bar(0, 40, 10.0), bar(1, 40, 30.0),
                                                   bar(2, 40, 20.0), bar(3, 40, 45.0)}));
  EXPECT_TRUE(diagnosis.suspects.empty()) << diagnosis.suspects[0].reason;
}

TEST(RankOfLine, ReadsTheLaunchersPrefixes) {
  EXPECT_EQ(RankOfLine("[rank3]: Traceback (most recent call last):"), 3);
  EXPECT_EQ(RankOfLine("[default12]:RuntimeError: NCCL error"), 12);
  EXPECT_EQ(RankOfLine("[1,5]<stderr>:Traceback (most recent call last):"), 5);
  EXPECT_EQ(RankOfLine("7: Traceback (most recent call last):"), 7);
  EXPECT_EQ(RankOfLine("Traceback (most recent call last):"), std::nullopt);
  EXPECT_EQ(RankOfLine("2024-01-01 12:00: error"), std::nullopt);
}

TEST(JoinLabels, CollapsesRuns) {
  EXPECT_EQ(JoinLabels({"rank 3"}), "rank 3");
  EXPECT_EQ(JoinLabels({"rank 0", "rank 1", "rank 2", "rank 5", "rank 7", "rank 8"}),
            "ranks 0-2, 5, 7, 8");
  EXPECT_EQ(JoinLabels({"pid 4", "pid 5"}), "pid 4, pid 5");
}

}  // namespace
}  // namespace trainwatch::diagnose
