#include "collect/rank_map.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "collect/process_collectors.h"
#include "collect/process_tree.h"
#include "support/fake_proc.h"

namespace trainwatch::collect {
namespace {

using namespace std::string_literals;
using trainwatch::testing::FakeProc;

RankMap MapOf(const trainwatch::testing::FakeProc& proc, const std::vector<pid_t>& seeds) {
  return BuildRankMap(seeds, ProcessTree::Read(proc.root()), proc.root());
}

std::vector<std::string> Labels(const RankMap& map) {
  std::vector<std::string> labels;
  for (const RankProcess& rank : map.ranks) {
    labels.push_back(rank.label() + "=" + std::to_string(rank.pid));
  }
  return labels;
}

TEST(ParseProcessStat, ReadsTheFieldsAfterACommWithSpacesAndParentheses) {
  const auto stat = ParseProcessStat(
      "42 (pt main (x) y) R 7 1 1 0 -1 4194560 100 0 0 0 70 30 0 0 20 0 3 0 12345 1000 100\n");
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->pid, 42);
  EXPECT_EQ(stat->comm, "pt main (x) y");
  EXPECT_EQ(stat->state, 'R');
  EXPECT_EQ(stat->ppid, 7);
  EXPECT_EQ(stat->cpu_ticks, 100u);
  EXPECT_EQ(stat->start_ticks, 12345u);
  EXPECT_FALSE(ParseProcessStat("42 (short) S 1 2").has_value());
  EXPECT_FALSE(ParseProcessStat("garbage").has_value());
}

TEST(ParseRankIdentity, TakesTheMostSpecificRankAndTheBinding) {
  const std::string environ =
      "SLURM_PROCID=1\0RANK=9\0LOCAL_RANK=1\0WORLD_SIZE=16\0LOCAL_WORLD_SIZE=8\0GROUP_RANK=1\0"
      "MASTER_ADDR=n0\0"
      "MASTER_PORT=29500\0TORCHELASTIC_RUN_ID=job7\0HABANA_VISIBLE_MODULES=1\0SLURM_JOB_ID=77\0"s;
  const RankIdentity id = ParseRankIdentity(environ);
  EXPECT_EQ(id.rank, 9);
  EXPECT_EQ(id.rank_source, "RANK");
  EXPECT_EQ(id.local_rank, 1);
  EXPECT_EQ(id.world_size, 16);
  EXPECT_EQ(id.local_world_size, 8);
  EXPECT_EQ(id.node_rank, 1);
  EXPECT_EQ(id.master, "n0:29500");
  EXPECT_EQ(id.run_id, "job7");
  EXPECT_EQ(id.slurm_job, "77");
  ASSERT_EQ(id.devices.size(), 1u);
  EXPECT_EQ(id.devices[0].first, "HABANA_VISIBLE_MODULES");
  const RankIdentity mpi = ParseRankIdentity("OMPI_COMM_WORLD_RANK=3\0RANK=x\0"s);
  EXPECT_EQ(mpi.rank, 3);  // a RANK that is not a number is not one
  // The rank alone, in one pass, takes the same one each time.
  EXPECT_EQ(RankInEnviron(environ), 9);
  EXPECT_EQ(RankInEnviron("OMPI_COMM_WORLD_RANK=3\0RANK=x\0"s), 3);
  EXPECT_EQ(RankInEnviron("RANK=2\0RANK=5\0"s), 2) << "the first entry of a name";
  EXPECT_EQ(RankInEnviron("PATH=/bin\0"s), std::nullopt);
  EXPECT_EQ(mpi.rank_source, "OMPI_COMM_WORLD_RANK");
  EXPECT_FALSE(ParseRankIdentity("PATH=/bin\0"s).rank.has_value());
}

TEST(BuildRankMap, FollowsTorchrunFromOneRankDownToEveryRankButNotTheirWorkers) {
  FakeProc proc;
  proc.Add(100, 1, 10, {"bash", "run.sh"}, {"SLURM_PROCID=0"}, "bash");
  proc.Add(101, 100, 11, {"/usr/bin/python3", "-m", "torch.distributed.run", "train.py"},
           {"SLURM_PROCID=0"});
  for (int rank = 0; rank < 3; ++rank) {
    proc.Add(110 + rank, 101, 20 + rank, {"/usr/bin/python3", "-u", "train.py"},
             {"SLURM_PROCID=0", "RANK=" + std::to_string(rank),
              "LOCAL_RANK=" + std::to_string(rank), "WORLD_SIZE=3"});
  }
  // A DataLoader worker of rank 1 (fork: the same environment).
  proc.Add(120, 111, 30, {"/usr/bin/python3", "-u", "train.py"},
           {"SLURM_PROCID=0", "RANK=1", "LOCAL_RANK=1", "WORLD_SIZE=3"});
  const RankMap map = MapOf(proc, {112});
  EXPECT_EQ(Labels(map), (std::vector<std::string>{"rank 0=110", "rank 1=111", "rank 2=112"}));
  EXPECT_EQ(map.launchers, std::vector<pid_t>{101});
  EXPECT_EQ(map.ranks[0].launcher, 101);
  EXPECT_EQ(map.ranks[0].rank_source, "RANK");
  EXPECT_EQ(map.ranks[2].cmdline, "/usr/bin/python3 -u train.py");
}

TEST(BuildRankMap, NumbersMpSpawnChildrenInStartOrder) {
  FakeProc proc;
  proc.Add(200, 1, 10, {"/usr/bin/python3", "train.py"}, {});
  // Started out of pid order: the start time decides.
  proc.Add(203, 200, 20,
           {"/usr/bin/python3", "-c",
            "from multiprocessing.spawn import "
            "spawn_main; spawn_main(tracker_fd=5, pipe_handle=7)",
            "--multiprocessing-fork"},
           {});
  proc.Add(202, 200, 21,
           {"/usr/bin/python3", "-c",
            "from multiprocessing.spawn import "
            "spawn_main; spawn_main(tracker_fd=5, pipe_handle=9)",
            "--multiprocessing-fork"},
           {});
  proc.Add(201, 200, 15,
           {"/usr/bin/python3", "-c", "from multiprocessing.resource_tracker import main;main(4)"},
           {});
  const RankMap map = MapOf(proc, {200});
  EXPECT_EQ(Labels(map), (std::vector<std::string>{"rank 0=203", "rank 1=202"}));
  EXPECT_EQ(map.ranks[0].rank_source, "spawn order");
  EXPECT_EQ(map.ranks[0].launcher, 200);
}

TEST(BuildRankMap, LeavesZombiesOut) {
  FakeProc proc;
  proc.Add(400, 1, 10, {"/usr/bin/python3", "launch.py"}, {});
  proc.Add(401, 400, 11, {"/usr/bin/python3", "launch.py"}, {"RANK=0"});
  proc.Add(402, 400, 12, {}, {}, "python3", 'Z');  // rank 1 crashed, not reaped yet
  const RankMap map = MapOf(proc, {400, 401, 402});
  EXPECT_EQ(Labels(map), std::vector<std::string>{"rank 0=401"});
  EXPECT_EQ(ProcessTree::Read(proc.root()).Find(402), nullptr);
  EXPECT_FALSE(ReadCpuTicks(402, proc.root()).has_value());
  EXPECT_TRUE(ReadCpuTicks(401, proc.root()).has_value());
}

// A rank exiting at the moment of the capture is still in the tree but its environment is
// gone (the kernel answers ESRCH): the map names it unreadable, so the capture can take it
// for the exited rank it was remembered as.
TEST(BuildRankMap, NamesTheProcessesItCouldNotRead) {
  FakeProc proc;
  proc.Add(500, 1, 10, {"/usr/bin/python3", "launch.py"}, {});
  proc.Add(501, 500, 11, {"/usr/bin/python3", "launch.py"}, {"RANK=0"});
  proc.Add(502, 500, 12, {"/usr/bin/python3", "launch.py"}, {"RANK=1"});
  std::filesystem::remove(proc.root() + "/502/environ");
  const RankMap map = MapOf(proc, {500});
  EXPECT_EQ(Labels(map), std::vector<std::string>{"rank 0=501"});
  EXPECT_EQ(map.unreadable, std::vector<pid_t>{502});
  ASSERT_EQ(map.notes.size(), 1u);
  EXPECT_EQ(map.notes[0].rfind("pid 502: ", 0), 0u) << map.notes[0];
}

TEST(BuildRankMap, FallsBackToTheSeedsThemselves) {
  FakeProc proc;
  proc.Add(300, 1, 10, {"/usr/bin/python3", "train.py"}, {});
  const RankMap map = MapOf(proc, {300, 999});  // 999 is not there
  EXPECT_EQ(Labels(map), std::vector<std::string>{"pid 300=300"});
  EXPECT_TRUE(map.launchers.empty());
}

// The rank map's command lines come through JoinCmdline (collect/process_collectors.h), as the
// exited ranks' and the processes' collectors do.
TEST(BuildRankMap, JoinsACommandLineWithoutATrailingSpace) {
  FakeProc proc;
  proc.Add(300, 1, 10, {"/usr/bin/python3", "train.py", ""}, {"RANK=0"});
  const RankMap map = MapOf(proc, {300});
  ASSERT_EQ(map.ranks.size(), 1u);
  EXPECT_EQ(map.ranks[0].cmdline, "/usr/bin/python3 train.py");
}

TEST(JoinCmdline, JoinsTheArgumentsWithSpacesAndQuotesThemOnlyWhenAsked) {
  const std::string raw = "python3\0train.py\0--name\0a b\0"s;
  EXPECT_EQ(JoinCmdline(raw, /*quote=*/false), "python3 train.py --name a b");
  EXPECT_EQ(JoinCmdline(raw, /*quote=*/true), "python3 train.py --name 'a b'");
  // An empty last argument: nothing unquoted (no trailing space), '' quoted.
  EXPECT_EQ(JoinCmdline("a\0\0"s, /*quote=*/false), "a");
  EXPECT_EQ(JoinCmdline("a\0\0"s, /*quote=*/true), "a ''");
  EXPECT_EQ(JoinCmdline("a\0\0b\0"s, /*quote=*/false), "a  b");
  // A process that rewrote its argv may leave no NUL at all.
  EXPECT_EQ(JoinCmdline("python3 train.py", /*quote=*/false), "python3 train.py");
  EXPECT_EQ(JoinCmdline("", /*quote=*/false), "");
}

TEST(IsLauncherCommand, KnowsTheLaunchers) {
  EXPECT_TRUE(
      IsLauncherCommand("/usr/bin/python3 -m torch.distributed.run --nproc_per_node=8 t.py"));
  EXPECT_TRUE(IsLauncherCommand("/usr/local/bin/torchrun --nnodes 2 train.py"));
  EXPECT_TRUE(IsLauncherCommand("mpirun -np 8 python train.py"));
  EXPECT_TRUE(IsLauncherCommand("srun python train.py"));
  EXPECT_FALSE(IsLauncherCommand("/usr/bin/python3 train.py --launcher-config x"));
  EXPECT_FALSE(IsLauncherCommand("bash run_torchrun_job.sh"));
}

}  // namespace
}  // namespace trainwatch::collect
