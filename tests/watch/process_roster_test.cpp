// The roster on a FakeEnv over a /proc of our own: the ranks under a launcher are remembered
// while they run and kept, with how they ended, after they are gone.
#include "watch/process_roster.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <map>

#include "support/fake_env.h"
#include "support/fake_proc.h"

namespace trainwatch::watch {
namespace {

using testing::FakeEnv;
using testing::FakeProc;

// A torchrun agent (pid 100) and its four ranks, 110-113.
void AddJob(FakeProc& proc) {
  proc.Add(100, 1, 10, {"/usr/bin/python3", "-m", "torch.distributed.run", "train.py"}, {});
  for (int rank = 0; rank < 4; ++rank) {
    proc.Add(110 + rank, 100, 20 + rank, {"/usr/bin/python3", "-u", "train.py"},
             {"RANK=" + std::to_string(rank), "WORLD_SIZE=4", "LOCAL_WORLD_SIZE=4"});
  }
}

// pid -> exit cause ("" while it runs or when unknown).
std::map<int, std::string> Causes(const ProcessRoster& roster,
                                  const std::map<int, std::string>& oom_lines = {}) {
  std::map<int, std::string> causes;
  for (const source::WriterProcess& process : roster.Remembered([&](int pid) {
         auto line = oom_lines.find(pid);
         return line == oom_lines.end() ? std::string() : line->second;
       })) {
    causes[process.pid] = process.exit_cause;
  }
  return causes;
}

TEST(ProcessRoster, RemembersALaunchersRanksAndKeepsTheKilledOneWithItsExitCause) {
  FakeProc proc;
  AddJob(proc);
  FakeEnv env(proc.root());
  ProcessRoster roster(env);
  roster.Look({100});  // the agent writes the log
  EXPECT_TRUE(roster.looking());
  env.RunUntilIdle();
  EXPECT_FALSE(roster.looking());
  ASSERT_EQ(roster.size(), 4u);
  const std::vector<source::WriterProcess> remembered = roster.Remembered({});
  EXPECT_NE(remembered[3].environ.find("RANK=3"), std::string::npos) << "read while it ran";
  EXPECT_NE(remembered[3].cmdline.find("train.py"), std::string::npos);

  // Rank 3 is SIGKILLed (the kernel says so), rank 2 vanishes with no word, rank 1's pid is
  // taken by another process; the agent lives on.
  roster.OnExit(113, SIGKILL);
  roster.OnExit(4242, 0);  // not ours: nothing
  proc.Remove(113);
  proc.Remove(112);
  proc.Remove(111);
  proc.Add(111, 100, 99, {"/usr/bin/python3", "-u", "train.py"},
           {"RANK=1", "WORLD_SIZE=4", "LOCAL_WORLD_SIZE=4", "RESTARTED=1"});
  roster.Look({100});
  env.RunUntilIdle();
  EXPECT_EQ(Causes(roster),
            (std::map<int, std::string>{
                {110, ""}, {111, ""}, {112, ""}, {113, "killed by signal 9 (SIGKILL)"}}));
  const std::vector<source::WriterProcess> now = roster.Remembered({});
  auto restarted = std::find_if(now.begin(), now.end(),
                                [](const source::WriterProcess& p) { return p.pid == 111; });
  ASSERT_NE(restarted, now.end());
  EXPECT_NE(restarted->environ.find("RESTARTED=1"), std::string::npos)
      << "a reused pid is the new process, not the remembered one";
  // The OOM killer's line names what the kernel's status alone cannot.
  EXPECT_EQ(Causes(roster, {{112, "Out of memory: Killed process 112 (python3)"}})[112],
            "killed by the kernel's OOM killer (signal 9)");
  EXPECT_EQ(Causes(roster, {{110, "Out of memory: Killed process 110 (python3)"}})[110], "")
      << "a rank still running has no exit cause, whatever a line says";

  // Hours later, the dead are forgotten; the living are not.
  env.Advance(std::chrono::duration_cast<std::chrono::milliseconds>(ProcessRoster::kKeepExited) +
              std::chrono::minutes(1));
  roster.Look({100});
  env.RunUntilIdle();
  EXPECT_EQ(Causes(roster), (std::map<int, std::string>{{110, ""}, {111, ""}}));
}

TEST(ProcessRoster, ALookRequestedDuringOneRunsAfterItAndAGoneSeedFindsNothingNew) {
  FakeProc proc;
  AddJob(proc);
  FakeEnv env(proc.root());
  ProcessRoster roster(env);
  roster.Look({999});  // gone already: nothing to walk
  roster.Look({100});  // asked while the first runs
  env.RunUntilIdle();
  EXPECT_EQ(roster.size(), 4u);
}

TEST(ProcessRoster, ARankThatExitsWhileTheLookRunsIsKeptGoneWithItsCauseAndPidsAreNotReused) {
  FakeProc proc;
  AddJob(proc);
  FakeEnv env(proc.root());
  env.HoldPool();
  ProcessRoster roster(env);
  roster.Look({100});
  roster.OnExit(113, SIGKILL);  // while the walk runs: the walk saw rank 3 alive
  env.ReleasePool();
  env.RunUntilIdle();
  EXPECT_EQ(Causes(roster)[113], "killed by signal 9 (SIGKILL)");
  // Rank 2 vanished unheard; a later process with its pid exits: not rank 2's cause.
  proc.Remove(112);
  roster.Look({100});
  env.RunUntilIdle();
  roster.OnExit(112, 1 << 8);
  EXPECT_EQ(Causes(roster)[112], "");
}

TEST(ExitCause, TheOomLineWinsOverAKillOrNoStatusButNotOverAnExitCode) {
  const std::string oom = "Out of memory: Killed process 7 (python3)";
  EXPECT_EQ(ExitCause(SIGKILL, oom), "killed by the kernel's OOM killer (signal 9)");
  EXPECT_EQ(ExitCause(std::nullopt, oom), "killed by the kernel's OOM killer (signal 9)");
  EXPECT_EQ(ExitCause(1 << 8, oom), "exit code 1") << "it exited on its own after all";
  EXPECT_EQ(ExitCause(SIGSEGV, ""), "killed by signal 11 (SIGSEGV)");
  EXPECT_EQ(ExitCause(std::nullopt, ""), "");
}

}  // namespace
}  // namespace trainwatch::watch
