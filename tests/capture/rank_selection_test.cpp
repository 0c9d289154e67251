#include "capture/rank_selection.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace trainwatch::capture {
namespace {

using namespace std::string_literals;

collect::RankProcess Rank(pid_t pid, std::optional<int> rank) {
  collect::RankProcess process;
  process.pid = pid;
  process.rank = rank;
  process.rank_source = rank ? "RANK" : "";
  return process;
}

TEST(ExitedRanks, TakesAGoneWriterWithARankAndJoinsItsCommandLine) {
  const trainwatch::testing::TempDir proc;  // an empty /proc: every writer is gone
  source::WriterProcess writer;
  writer.pid = 4242;
  writer.comm = "python3";
  writer.cmdline = "python3\0train.py\0\0"s;  // its last argument empty
  writer.environ = "RANK=3\0WORLD_SIZE=4\0"s;
  source::WriterProcess no_rank = writer;
  no_rank.pid = 4343;
  no_rank.environ = "PATH=/bin\0"s;
  const std::vector<collect::RankProcess> exited =
      ExitedRanks({writer, no_rank}, collect::ProcessTree::Read(proc.path().string()), {});
  ASSERT_EQ(exited.size(), 1u);
  EXPECT_EQ(exited[0].pid, 4242);
  EXPECT_EQ(exited[0].rank, 3);
  EXPECT_EQ(exited[0].cmdline, "python3 train.py");
  EXPECT_EQ(exited[0].environ, writer.environ);
}

TEST(ExitedRanks, KeepsHowARankEndedAndLeavesAnotherRunsRankOut) {
  const trainwatch::testing::TempDir proc;
  collect::RankMap map;  // the live job: run "b", rank 0
  map.ranks = {Rank(10, 0)};
  map.ranks[0].identity.run_id = "b";
  source::WriterProcess killed;
  killed.pid = 13;
  killed.environ = "RANK=3\0TORCHELASTIC_RUN_ID=b\0"s;
  killed.exit_cause = "killed by signal 9 (SIGKILL)";
  source::WriterProcess old = killed;  // rank 2 of an earlier run
  old.pid = 7;
  old.environ = "RANK=2\0TORCHELASTIC_RUN_ID=a\0"s;
  const std::vector<collect::RankProcess> exited =
      ExitedRanks({killed, old}, collect::ProcessTree::Read(proc.path().string()), map);
  ASSERT_EQ(exited.size(), 1u);
  EXPECT_EQ(exited[0].rank, 3);
  EXPECT_EQ(exited[0].exit_cause, "killed by signal 9 (SIGKILL)");
}

TEST(ExitedRanks, WithNoRankAliveTheNewestAttemptsRanksAloneAreTaken) {
  const trainwatch::testing::TempDir proc;  // every rank gone
  auto rank = [](pid_t pid, int number, const std::string& run) {
    source::WriterProcess writer;
    writer.pid = pid;
    writer.environ = "RANK=" + std::to_string(number) + "\0TORCHELASTIC_RUN_ID="s + run + "\0"s;
    return writer;
  };
  // An hour-old attempt's ranks (lower pids, listed first), then the latest attempt's.
  const std::vector<collect::RankProcess> exited =
      ExitedRanks({rank(100, 0, "a"), rank(101, 1, "a"), rank(200, 0, "b"), rank(201, 1, "b")},
                  collect::ProcessTree::Read(proc.path().string()), {});
  ASSERT_EQ(exited.size(), 2u);
  EXPECT_EQ(exited[0].pid, 200);
  EXPECT_EQ(exited[1].pid, 201);
}

TEST(ExitedRanks, AMapOfRanklessWritersAloneAnchorsNothing) {
  const trainwatch::testing::TempDir proc;  // the ranks gone
  // The map fell back on the writers: the script that launched the ranks, and a rank exiting
  // (its environment unreadable), neither with a rank number.
  collect::RankMap map;
  map.ranks = {Rank(100, std::nullopt), Rank(103, std::nullopt)};
  auto rank = [](pid_t pid, int number) {
    source::WriterProcess writer;
    writer.pid = pid;
    writer.environ = "RANK=" + std::to_string(number) + "\0TORCHELASTIC_RUN_ID=r\0"s;
    return writer;
  };
  // A plain script's map with no rank of its own remembered: the same user's earlier job's
  // rank is not its.
  const collect::ProcessTree tree = collect::ProcessTree::Read(proc.path().string());
  collect::RankMap plain;
  plain.ranks = {Rank(100, std::nullopt)};
  EXPECT_TRUE(ExitedRanks({rank(50, 2)}, tree, plain, {100}).empty());
  // The incident's writers (the seeds) and the exiting rank are this capture's.
  std::vector<collect::RankProcess> exited =
      ExitedRanks({rank(102, 2), rank(103, 3)}, tree, map, {100, 102});
  ASSERT_EQ(exited.size(), 2U);
  EXPECT_EQ(exited[0].rank, 2);
  EXPECT_EQ(exited[1].rank, 3);
  // The exiting rank is listed once, by its rank.
  ForgetRanklessNamedExited(map, exited);
  ASSERT_EQ(map.ranks.size(), 1U);
  EXPECT_EQ(map.ranks[0].pid, 100);
}

TEST(SkipRanksPastTheCap, KeepsTheFirstRanksOfTheMapAndNamesTheRest) {
  collect::RankMap map;
  map.ranks = {Rank(10, 0), Rank(11, 1), Rank(12, 2), Rank(9, std::nullopt)};
  SkipRanksPastTheCap(map, 2);
  ASSERT_EQ(map.ranks.size(), 2u);
  EXPECT_EQ(map.ranks[0].pid, 10);
  EXPECT_EQ(map.ranks[1].pid, 11);
  ASSERT_EQ(map.notes.size(), 1u);
  EXPECT_EQ(map.notes[0],
            "2 of 4 ranks not captured, past capture.max_ranks (2): rank 2 (pid 12), a process "
            "(pid 9)");
}

TEST(SkipRanksPastTheCap, LeavesAMapWithinTheCapAlone) {
  collect::RankMap map;
  map.ranks = {Rank(10, 0), Rank(11, 1)};
  SkipRanksPastTheCap(map, 2);
  EXPECT_EQ(map.ranks.size(), 2u);
  EXPECT_TRUE(map.notes.empty());
}

}  // namespace
}  // namespace trainwatch::capture
