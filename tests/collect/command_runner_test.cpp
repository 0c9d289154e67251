// CommandRunner on a FakeEnv: the deadline's escalation (SIGTERM, SIGKILL a second later,
// abandoning a child that still will not die), the stuck tool not run again, output caps and
// the outcomes, all stepped through time with no child process and no sleep.
#include "collect/command_runner.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "collect/stray_processes.h"
#include "support/fake_env.h"
#include "support/temp_dir.h"

namespace trainwatch::collect {
namespace {

using std::chrono::milliseconds;
using testing::FakeEnv;

config::CommandConfig Command(const std::string& name, std::vector<std::string> argv,
                              milliseconds timeout = milliseconds(5000)) {
  config::CommandConfig command;
  command.name = name;
  command.argv = std::move(argv);
  command.timeout = timeout;
  command.as = "device/" + name + ".txt";
  return command;
}

class CommandRunnerTest : public ::testing::Test {
 protected:
  void Run(std::vector<config::CommandConfig> commands) {
    results_.reset();
    runner_.Run(std::move(commands),
                [this](std::vector<CollectorResult> results) { results_ = std::move(results); });
  }
  FakeEnv::Child& Child(std::size_t i) { return *env_.children().at(i); }
  const CollectorResult& Result(std::size_t i) const { return results_->at(i); }
  static std::string Text(const CollectorResult& result, const std::string& path) {
    for (const Artifact& artifact : result.artifacts) {
      if (artifact.path == path) {
        return artifact.content;
      }
    }
    return "<none>";
  }

  testing::TempDir proc_;  // an empty /proc: no strays to look for (the real one costs ms)
  FakeEnv env_{proc_.path().string()};
  CommandRunner runner_{env_};
  std::optional<std::vector<CollectorResult>> results_;
};

TEST_F(CommandRunnerTest, AnsweringCommandsEndOkWithTheirOutput) {
  Run({Command("hl-smi-q", {"hl-smi", "-q"}), Command("docker-ps", {"docker", "ps"})});
  ASSERT_EQ(env_.children().size(), 2u);
  env_.Output(Child(0), "GPU 0: ok\n");
  env_.Advance(milliseconds(300));
  env_.Exit(Child(0), 0);
  EXPECT_FALSE(results_) << "one command still runs";
  env_.Output(Child(1), "CONTAINER ID\n");
  env_.Exit(Child(1), 0);
  ASSERT_TRUE(results_);
  EXPECT_EQ(Result(0).status, CollectorStatus::kOk);
  EXPECT_EQ(Text(Result(0), "device/hl-smi-q.txt"), "GPU 0: ok\n");
  EXPECT_DOUBLE_EQ(Result(0).duration_seconds, 0.3);
  EXPECT_EQ(Result(1).status, CollectorStatus::kOk);
  EXPECT_TRUE(Child(0).signals.empty());
  EXPECT_EQ(env_.active_timers(), 0u) << "no deadline left armed";
}

TEST_F(CommandRunnerTest, ADeadlineSendsTermToTheGroupThenKill) {
  Run({Command("hl-smi-q", {"hl-smi", "-q"}, milliseconds(2000))});
  env_.signals_kill = false;  // it ignores SIGTERM...
  env_.Advance(milliseconds(1999));
  EXPECT_TRUE(Child(0).signals.empty());
  env_.Advance(milliseconds(1));
  EXPECT_EQ(Child(0).signals, std::vector<int>{SIGTERM});
  env_.Advance(CommandRunner::kTermGrace - milliseconds(1));
  EXPECT_EQ(Child(0).signals.size(), 1u);
  env_.Advance(milliseconds(1));
  EXPECT_EQ(Child(0).signals, (std::vector<int>{SIGTERM, SIGKILL}));
  env_.Exit(Child(0), 0, SIGKILL);  // ...but not SIGKILL
  ASSERT_TRUE(results_);
  EXPECT_EQ(Result(0).status, CollectorStatus::kTimedOut);
  EXPECT_EQ(Result(0).detail, "killed at its 2000 ms deadline");
}

TEST_F(CommandRunnerTest, ACommandThatEndsOnTermIsTimedOutWithWhatItPrinted) {
  Run({Command("nvidia-smi-q", {"nvidia-smi", "-q"}, milliseconds(1000))});
  env_.Output(Child(0), "partial\n");
  env_.Advance(milliseconds(1000));
  ASSERT_TRUE(results_);
  EXPECT_EQ(Child(0).signals, std::vector<int>{SIGTERM});
  EXPECT_EQ(Result(0).status, CollectorStatus::kTimedOut);
  EXPECT_EQ(Text(Result(0), "device/nvidia-smi-q.txt"), "partial\n");
}

TEST_F(CommandRunnerTest, AChildThatWillNotDieIsAbandonedAndItsToolNotRunAgain) {
  env_.signals_kill = false;  // uninterruptible sleep on a wedged device
  Run({Command("hl-smi-q", {"hl-smi", "-q"}, milliseconds(1000))});
  const int pid = Child(0).pid;
  env_.Advance(milliseconds(1000) + CommandRunner::kTermGrace);
  EXPECT_FALSE(results_);
  env_.Advance(CommandRunner::kKillGrace);
  ASSERT_TRUE(results_) << "the bundle must not wait on a device that never answers";
  EXPECT_EQ(Result(0).status, CollectorStatus::kAbandoned);
  EXPECT_NE(Result(0).detail.find("abandoned, pid " + std::to_string(pid)), std::string::npos)
      << Result(0).detail;
  EXPECT_EQ(env_.active_timers(), 0u);

  // The same tool, under another name, while that child lives: skipped, nothing spawned.
  Run({Command("hl-smi-topo", {"hl-smi", "topo", "-m"})});
  ASSERT_TRUE(results_);
  EXPECT_EQ(env_.children().size(), 1u);
  EXPECT_EQ(Result(0).status, CollectorStatus::kSkipped);
  EXPECT_NE(Result(0).detail.find(std::to_string(pid)), std::string::npos);

  // Once it is gone, the tool runs again.
  env_.Exit(Child(0), 0, SIGKILL);
  Run({Command("hl-smi-q", {"hl-smi", "-q"})});
  ASSERT_EQ(env_.children().size(), 2u);
  env_.Exit(Child(1), 0);
  ASSERT_TRUE(results_);
  EXPECT_EQ(Result(0).status, CollectorStatus::kOk);
}

TEST_F(CommandRunnerTest, AGrandchildHoldingThePipesIsKilledAtTheDeadline) {
  Run({Command("docker-logs", {"sh", "-c", "docker logs x & exit 0"}, milliseconds(3000))});
  env_.Exit(Child(0), 0, 0, /*keep_pipes=*/true);
  EXPECT_FALSE(results_);
  env_.Advance(milliseconds(3000));
  EXPECT_EQ(Child(0).signals, std::vector<int>{SIGTERM});
  env_.EndOutput(Child(0));  // the group's SIGTERM took the grandchild
  ASSERT_TRUE(results_);
  EXPECT_EQ(Result(0).status, CollectorStatus::kTimedOut);
}

// The red team's leak: a collector whose grandchild calls setsid (out of the group the deadline
// signals) exits at once, and the grandchild lives on, one more process per capture. The
// grandchild still carries the run's mark in its environment: it is killed when its collector
// ends; a process with another run's mark (a prefix of this one's) is left alone.
TEST(CommandRunnerStrays, WhatACollectorLeftBehindIsKilledWhenItEnds) {
  testing::TempDir proc;
  FakeEnv env(proc.path().string());
  CommandRunner runner(env);
  std::optional<std::vector<CollectorResult>> results;
  runner.Run({Command("daemonizer", {"sh", "-c", "setsid sleep 1000 >/dev/null 2>&1 &"})},
             [&](std::vector<CollectorResult> r) { results = std::move(r); });
  ASSERT_EQ(env.children().size(), 1u);
  FakeEnv::Child& child = *env.children()[0];
  std::string mark;
  for (const std::string& entry : child.options.extra_env) {
    if (entry.starts_with(std::string(kRunMarkName) + "=")) {
      mark = entry;
    }
  }
  ASSERT_FALSE(mark.empty()) << "the run is not marked";
  const std::string environ = std::string("PATH=/bin\0", 10) + mark + '\0';
  for (const int pid : {child.pid, 5123, 5124, 5125}) {
    std::filesystem::create_directories(proc.path() / std::to_string(pid));
  }
  proc.Write(std::to_string(child.pid) + "/environ", environ);  // the child itself
  proc.Write("5123/environ", environ);                          // its setsid'd grandchild
  proc.Write("5124/environ", std::string("PATH=/bin\0", 10) + mark + "7" + '\0');
  proc.Write("5125/environ", "OTHER=1");
  env.live_pids = {5123, 5124, 5125};
  env.Exit(child, 0);
  ASSERT_TRUE(results);
  EXPECT_EQ((*results)[0].status, CollectorStatus::kOk);
  EXPECT_EQ(env.other_signals, (std::vector<std::pair<int, int>>{{5123, SIGKILL}}));
  EXPECT_TRUE(child.signals.empty());
}

// The capture's, the ranks' and gdb's runners run side by side: the end of one's child must not
// kill the other's as its stray (their marks once both counted from 1: gdb died with SIGKILL
// whenever eu-stack ended first).
TEST(CommandRunnerStrays, RunnersSideBySideNeverShareAMark) {
  testing::TempDir proc;
  FakeEnv env(proc.path().string());
  CommandRunner first(env);
  CommandRunner second(env);
  first.Run({Command("eu-stack", {"eu-stack", "-p", "1"})},
            [](const std::vector<CollectorResult>&) {});
  second.Run({Command("gdb", {"gdb", "-p", "1"})}, [](const std::vector<CollectorResult>&) {});
  ASSERT_EQ(env.children().size(), 2u);
  auto mark_of = [](const FakeEnv::Child& child) {
    for (const std::string& entry : child.options.extra_env) {
      if (entry.starts_with(std::string(kRunMarkName) + "=")) {
        return entry;
      }
    }
    return std::string();
  };
  const std::string mark = mark_of(*env.children()[0]);
  ASSERT_FALSE(mark.empty());
  EXPECT_NE(mark, mark_of(*env.children()[1]));
  // The second's child, as /proc shows it, outlives the first's.
  FakeEnv::Child& gdb = *env.children()[1];
  std::filesystem::create_directories(proc.path() / std::to_string(gdb.pid));
  proc.Write(std::to_string(gdb.pid) + "/environ", mark_of(gdb) + '\0');
  env.live_pids = {gdb.pid};
  env.Exit(*env.children()[0], 0);
  EXPECT_TRUE(env.other_signals.empty());
  EXPECT_TRUE(gdb.signals.empty());
}

// A trainwatch killed with -9 mid-capture leaves its collectors running (one that ignores
// SIGTERM, or hangs on a wedged device, forever). The next start kills the processes whose
// mark names a trainwatch that is gone, and leaves those of one still running (a `wrap` beside
// the daemon) and unmarked ones alone.
TEST(CommandRunnerStrays, TheCollectorsOfATrainwatchThatIsGoneAreKilledAtStart) {
  testing::TempDir proc;
  FakeEnv env(proc.path().string());
  const std::string name = std::string(kRunMarkName) + "=";
  const std::pair<int, std::string> processes[] = {
      {6001, name + "4000.3"},  // a collector of pid 4000, which is gone
      {6002, name + "4000.3"},  // its setsid'd grandchild
      {6003, name + "4100.1"},  // a collector of pid 4100, still running
      {6004, "OTHER=4000.3"},   // not a collector
  };
  for (const auto& [pid, entry] : processes) {
    std::filesystem::create_directories(proc.path() / std::to_string(pid));
    proc.Write(std::to_string(pid) + "/environ", std::string("PATH=/bin\0", 10) + entry + '\0');
  }
  env.live_pids = {4100, 6001, 6002, 6003, 6004};
  KillCollectorsOfDeadRuns(env);
  env.RunUntilIdle();
  std::vector<std::pair<int, int>> signals = env.other_signals;
  std::sort(signals.begin(), signals.end());
  EXPECT_EQ(signals, (std::vector<std::pair<int, int>>{{6001, SIGKILL}, {6002, SIGKILL}}));
}

TEST_F(CommandRunnerTest, MissingToolsFailuresAndSignals) {
  env_.not_installed.insert("npu-smi");
  Run({Command("npu-smi", {"npu-smi", "info"}), Command("dmesg", {"dmesg"}),
       Command("docker-ps", {"docker", "ps"})});
  ASSERT_EQ(env_.children().size(), 2u);  // npu-smi never started
  env_.Output(Child(0), "dmesg: read kernel buffer failed: Operation not permitted\n", true);
  env_.Exit(Child(0), 1);
  env_.Exit(Child(1), 0, SIGSEGV);
  ASSERT_TRUE(results_);
  EXPECT_EQ(Result(0).status, CollectorStatus::kMissing);
  EXPECT_EQ(Result(0).detail, "npu-smi is not installed here (not on PATH)");
  // Refused by the kernel (a container without CAP_SYSLOG): not a failure of the tool.
  EXPECT_EQ(Result(1).status, CollectorStatus::kNotPermitted);
  EXPECT_STREQ(CollectorStatusName(Result(1).status), "not_permitted");
  EXPECT_EQ(Result(1).exit_code, 1);
  EXPECT_EQ(Result(1).detail,
            "not permitted here (exit status 1: dmesg: read kernel buffer failed: Operation not "
            "permitted)");
  EXPECT_EQ(Text(Result(1), "device/dmesg.txt.stderr"),
            "dmesg: read kernel buffer failed: Operation not permitted\n");
  EXPECT_EQ(Result(2).status, CollectorStatus::kFailed);
  EXPECT_NE(Result(2).detail.find("killed by signal"), std::string::npos);
}

TEST_F(CommandRunnerTest, OutputIsCappedAtTheHeadOrTheTail) {
  config::CommandConfig head = Command("head", {"cat", "a"});
  head.max_output_bytes = 4;
  config::CommandConfig tail = Command("tail", {"dmesg"});
  tail.max_output_bytes = 4;
  tail.keep_tail = true;
  Run({head, tail});
  for (std::size_t i = 0; i < 2; ++i) {
    env_.Output(Child(i), "abc");
    env_.Output(Child(i), "defg");
    env_.Exit(Child(i), 0);
  }
  ASSERT_TRUE(results_);
  EXPECT_EQ(Text(Result(0), "device/head.txt"), "abcd");
  EXPECT_EQ(Text(Result(1), "device/tail.txt"), "defg");
  EXPECT_TRUE(Result(0).truncated);
  EXPECT_TRUE(Result(1).truncated);
}

TEST_F(CommandRunnerTest, HooksShareToolsButNotTheirFate) {
  CommandRunner hooks(env_, CommandRunner::HungKey::kName);
  env_.signals_kill = false;
  std::optional<std::vector<CollectorResult>> done;
  hooks.Run({Command("page", {"curl", "pager"}, milliseconds(100))},
            [&](std::vector<CollectorResult> results) { done = std::move(results); });
  env_.Advance(milliseconds(100) + CommandRunner::kTermGrace + CommandRunner::kKillGrace);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->at(0).status, CollectorStatus::kAbandoned);
  done.reset();
  hooks.Run({Command("slack", {"curl", "slack"})},
            [&](std::vector<CollectorResult> results) { done = std::move(results); });
  EXPECT_EQ(env_.children().size(), 2u) << "another hook with the same tool still runs";
}

TEST_F(CommandRunnerTest, AbortKillsWhatRunsAndNeverAnswers) {
  Run({Command("hl-smi-q", {"hl-smi", "-q"})});
  EXPECT_EQ(runner_.Running(), std::vector<std::string>{"hl-smi-q"});
  runner_.Abort();
  EXPECT_EQ(Child(0).signals, std::vector<int>{SIGKILL});
  env_.Advance(milliseconds(10000));
  EXPECT_FALSE(results_);
  EXPECT_TRUE(runner_.Running().empty());
}

}  // namespace
}  // namespace trainwatch::collect
