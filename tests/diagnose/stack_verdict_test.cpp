// What the stacks say a hang is: a collective mismatch, a deadlock, a DataLoader wait, ranks
// missing from the rendezvous, a rank gone, or every rank waiting (the network or another
// node) — each from stacks shaped as py-bt and eu-stack give them, innermost frame first.
#include "diagnose/stack_verdict.h"

#include <gtest/gtest.h>

namespace trainwatch::diagnose {
namespace {

using collect::StackFrame;

const char* const kC10d = "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py";

std::vector<StackFrame> In(const char* collective, int line) {
  return {{"wait", "", 0},
          {collective, kC10d, 1541},
          {"train", "/job/job.py", line},
          {"<module>", "/job/job.py", 200}};
}

// A job whose every rank runs here, of `world_size` ranks.
JobShape Shape(int world_size, bool error_printed = false) {
  JobShape shape;
  shape.world_size = world_size;
  shape.all_local = true;
  shape.error_printed = error_printed;
  return shape;
}

RankState Rank(int rank, std::vector<StackFrame> python, std::vector<StackFrame> native = {}) {
  RankState state;
  state.label = "rank " + std::to_string(rank);
  state.rank = rank;
  state.pid = 100 + rank;
  state.python = std::move(python);
  state.native = std::move(native);
  return state;
}

TEST(JudgeStacks, ARankInAnotherCollectiveIsAMismatchAndTheCulprit) {
  const std::vector<RankState> ranks = {
      Rank(0, In("all_reduce", 157)), Rank(1, In("all_reduce", 157)), Rank(2, In("broadcast", 154)),
      Rank(3, In("all_reduce", 157))};
  const std::optional<StackVerdict> verdict = JudgeStacks(ranks, Shape(4));
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->kind, "collective_mismatch");
  EXPECT_EQ(verdict->says,
            "collective mismatch: rank 2 in broadcast at job.py:154 while ranks 0, 1, 3 in "
            "all_reduce at job.py:157");
  EXPECT_EQ(verdict->verdict.cause, rules::Cause::kApplication);
  EXPECT_EQ(verdict->culprits, (std::vector<std::string>{"rank 2"}));
}

TEST(JudgeStacks, TheSameCollectiveFromAnotherCallSiteIsAMismatchToo) {
  const std::vector<RankState> ranks = {Rank(0, In("all_reduce", 157)),
                                        Rank(1, In("all_reduce", 157)),
                                        Rank(2, In("all_reduce", 171))};
  const std::optional<StackVerdict> verdict = JudgeStacks(ranks, Shape(3));
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->culprits, (std::vector<std::string>{"rank 2"}));
}

TEST(JudgeStacks, AMainThreadBlockedOnALockItTakesIsADeadlock) {
  // `with self.lock:` in log_metrics, called from log_metrics: CPython blocks in C.
  const std::vector<StackFrame> python = {{"log_metrics", "/job/job.py", 91},
                                          {"log_metrics", "/job/job.py", 95},
                                          {"train", "/job/job.py", 140}};
  const std::vector<StackFrame> native = {{"__futex_abstimed_wait_common", "", 0},
                                          {"PyThread_acquire_lock_timed", "", 0},
                                          {"lock_PyThread_acquire_lock", "", 0}};
  const std::vector<RankState> ranks = {Rank(0, In("all_reduce", 157)), Rank(1, python, native)};
  const std::optional<StackVerdict> verdict = JudgeStacks(ranks, Shape(2));
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->kind, "deadlock");
  EXPECT_EQ(verdict->says,
            "deadlock: rank 1's main thread waits for a lock in log_metrics at job.py:91 that it "
            "already holds (log_metrics is on its stack twice)");
  EXPECT_EQ(verdict->culprits, (std::vector<std::string>{"rank 1"}));
}

TEST(JudgeStacks, ALockWhosePyBtShowsTheBuiltInEnterIsADeadlockWithoutNativeFrames) {
  const std::vector<StackFrame> python = {{"__enter__", "", 0},
                                          {"log_metrics", "/job/job.py", 44},
                                          {"log_metrics", "/job/job.py", 47},
                                          {"worker", "/job/job.py", 90}};
  const std::optional<StackVerdict> verdict =
      JudgeStacks({Rank(0, In("all_reduce", 157)), Rank(1, python)}, Shape(2));
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->says,
            "deadlock: rank 1's main thread waits for a lock in log_metrics at job.py:44 that it "
            "already holds (log_metrics is on its stack twice)");
}

TEST(JudgeStacks, AQueueOrEventWaitInsideALibraryIsNoDeadlock) {
  const std::vector<StackFrame> python = {{"wait", "/usr/lib/python3.11/threading.py", 320},
                                          {"get", "/usr/lib/python3.11/queue.py", 171},
                                          {"consume", "/job/job.py", 60}};
  const std::vector<StackFrame> native = {{"PyThread_acquire_lock_timed", "", 0}};
  const std::vector<RankState> ranks = {Rank(0, python, native)};
  const std::optional<StackVerdict> verdict = JudgeStacks(ranks, Shape(1));
  EXPECT_FALSE(verdict && verdict->kind == "deadlock");
}

TEST(JudgeStacks, ARankWaitingForItsDataLoaderWorkersIsNamed) {
  const std::vector<StackFrame> python = {
      {"get", "/usr/lib/python3.11/queue.py", 180},
      {"_try_get_data", "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py", 1133},
      {"_next_data", "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py", 1295},
      {"train", "/job/job.py", 40}};
  const std::vector<RankState> ranks = {Rank(0, In("all_reduce", 157)), Rank(1, python)};
  const std::optional<StackVerdict> verdict = JudgeStacks(ranks, Shape(2));
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->kind, "dataloader");
  EXPECT_EQ(verdict->culprits, (std::vector<std::string>{"rank 1"}));
}

TEST(JudgeStacks, RanksInTheRendezvousWithOneMissingSayWhichNeverJoined) {
  const std::vector<StackFrame> meeting = {{"_store_based_barrier", kC10d, 300},
                                           {"init_process_group", kC10d, 760},
                                           {"main", "/job/job.py", 20}};
  const std::vector<RankState> ranks = {Rank(0, meeting), Rank(1, meeting), Rank(2, meeting)};
  const std::optional<StackVerdict> verdict = JudgeStacks(ranks, Shape(4));
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->kind, "rendezvous");
  EXPECT_EQ(verdict->verdict.cause, rules::Cause::kInfrastructure);
  EXPECT_NE(verdict->says.find("rank 3 of 4 never joined"), std::string::npos) << verdict->says;
}

TEST(JudgeStacks, TheStuckDataLoaderWorkerIsNamedNotAnIdleOneWithItsParentsFrames) {
  const std::string dataloader = "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py";
  const std::string worker_py = "/usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py";
  RankState waiting = Rank(1, {{"_try_get_data", dataloader, 1132},
                               {"_next_data", dataloader, 1294},
                               {"main", "/job/train.py", 40}});
  // An idle worker (forked: the parent's main below its loop), then the stuck one.
  waiting.workers = {
      {812,
       {{"get", "/usr/lib/python3.11/multiprocessing/queues.py", 113},
        {"_worker_loop", worker_py, 302},
        {"main", "/job/train.py", 40}}},
      {813,
       {{"read", "/job/data.py", 41},
        {"__getitem__", "/job/data.py", 50},
        {"fetch", "/usr/lib/python3/dist-packages/torch/utils/data/_utils/fetch.py", 58},
        {"_worker_loop", worker_py, 308},
        {"main", "/job/train.py", 40}}}};
  const std::vector<RankState> ranks = {Rank(0, In("all_reduce", 157)), waiting};
  const std::optional<StackVerdict> verdict = JudgeStacks(ranks, Shape(2));
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->kind, "dataloader");
  EXPECT_NE(verdict->says.find("worker pid 813 is in read at data.py:41"), std::string::npos)
      << verdict->says;
  // Every worker idle: none is named, the generic sentence stays.
  waiting.workers.pop_back();
  const std::optional<StackVerdict> idle =
      JudgeStacks({Rank(0, In("all_reduce", 157)), waiting}, Shape(2));
  ASSERT_TRUE(idle.has_value());
  EXPECT_EQ(idle->says.find("worker pid"), std::string::npos) << idle->says;
}

// eu-stack's native stack is taken before gdb's Python one: a rank still running may be in a
// collective in the first and sleeping between steps in the second. No mismatch is claimed.
TEST(JudgeStacks, ARankWhoseNativeAndPythonStacksDisagreeIsNoMismatch) {
  RankState moving = Rank(2, {{"sleep", "", 0}, {"worker", "/job/job.py", 176}},
                          {{"c10d::ProcessGroupGloo::AsyncWork::wait", "", 0}});
  const std::vector<RankState> ranks = {Rank(0, In("all_reduce", 173)),
                                        Rank(1, In("all_reduce", 173)), moving,
                                        Rank(3, In("all_reduce", 173))};
  const std::optional<StackVerdict> verdict = JudgeStacks(ranks, Shape(4));
  EXPECT_TRUE(!verdict || verdict->kind != "collective_mismatch") << verdict->says;
}

TEST(JudgeStacks, ARankGoneWhileItsPeersWaitIsThatRank) {
  std::vector<RankState> ranks = {Rank(0, In("all_reduce", 157)), Rank(1, In("all_reduce", 157)),
                                  Rank(2, In("all_reduce", 157)), Rank(3, {})};
  ranks[3].alive = false;
  const std::optional<StackVerdict> verdict = JudgeStacks(ranks, Shape(4));
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->kind, "rank_gone");
  EXPECT_EQ(verdict->says, "rank 3 is gone while ranks 0-2 wait in all_reduce at job.py:157");
  EXPECT_EQ(verdict->culprits, (std::vector<std::string>{"rank 3"}));
  ranks[3].exit_cause = "killed by signal 9 (SIGKILL)";  // the kernel said how
  EXPECT_EQ(JudgeStacks(ranks, Shape(4))->says,
            "rank 3 is gone (rank 3: killed by signal 9 (SIGKILL)) while ranks 0-2 wait in "
            "all_reduce at job.py:157");
}

TEST(JudgeStacks, EveryRankInTheSameCollectiveWithNoErrorIsTheNetworkOrAnotherNode) {
  const std::vector<RankState> ranks = {Rank(0, In("all_reduce", 157)),
                                        Rank(1, In("all_reduce", 157))};
  const std::optional<StackVerdict> verdict = JudgeStacks(ranks, Shape(2));
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->kind, "all_waiting");
  EXPECT_EQ(verdict->verdict.cause, rules::Cause::kInfrastructure);
  EXPECT_TRUE(verdict->culprits.empty());
  EXPECT_FALSE(JudgeStacks(ranks, Shape(2, true)))
      << "after a rank's own error, waiting follows it";
}

TEST(JudgeStacks, NoMismatchWhereTheStacksCannotTellOrAnErrorCameFirst) {
  const std::vector<RankState> mismatched = {Rank(0, In("all_reduce", 157)),
                                             Rank(1, In("all_reduce", 157)),
                                             Rank(2, In("broadcast", 154))};
  EXPECT_FALSE(JudgeStacks(mismatched, Shape(3, /*error_printed=*/true)))
      << "after rank 2's own error, its peers are wherever its failure left them";
  std::vector<RankState> native_only = mismatched;
  native_only[2].python.clear();
  native_only[2].native = {{"gloo::transport::tcp::UnboundBuffer::waitRecv", "", 0}};
  EXPECT_FALSE(JudgeStacks(native_only, Shape(3))) << "rank 2's call site is not known";
  std::vector<RankState> p2p = mismatched;
  p2p[2].python = {{"wait", "", 0}, {"recv", kC10d, 1200}, {"stage", "/job/pipe.py", 30}};
  EXPECT_FALSE(JudgeStacks(p2p, Shape(3))) << "a pipeline stage waiting in recv, by design";
}

TEST(JudgeStacks, OnANodeOfABiggerJobTheRendezvousSaysTheOtherNodesHaveNotJoined) {
  const std::vector<StackFrame> meeting = {{"_store_based_barrier", kC10d, 300},
                                           {"init_process_group", kC10d, 760},
                                           {"main", "/job/job.py", 20}};
  JobShape shape = Shape(16);
  shape.all_local = false;
  const std::optional<StackVerdict> verdict =
      JudgeStacks({Rank(8, meeting), Rank(9, meeting)}, shape);
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->kind, "rendezvous");
  EXPECT_NE(verdict->says.find("2 of the job's 16 ranks are here"), std::string::npos)
      << verdict->says;
  EXPECT_EQ(verdict->says.find("never joined"), std::string::npos) << verdict->says;
  // new_group() mid-training waits in _store_based_barrier too: no rendezvous verdict there.
  const std::vector<StackFrame> new_group = {{"_store_based_barrier", kC10d, 300},
                                             {"new_group", kC10d, 3400},
                                             {"train", "/job/job.py", 80}};
  const std::optional<StackVerdict> mid = JudgeStacks({Rank(0, new_group)}, Shape(2));
  EXPECT_FALSE(mid && mid->kind == "rendezvous");
}

}  // namespace
}  // namespace trainwatch::diagnose
