#include "watch/blocked_watch.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>

#include <filesystem>

#include "support/fake_env.h"
#include "support/temp_dir.h"

namespace trainwatch::watch {
namespace {

using trainwatch::testing::FakeEnv;
using trainwatch::testing::TempDir;
namespace fs = std::filesystem;

// A /proc with one process, 300, whose thread 301 sits in D reading a FUSE file.
class BlockedWatchTest : public ::testing::Test {
 protected:
  BlockedWatchTest() : env_(root_.path().string()) {
    fs::create_directories(root_.PathOf("300/task/300"));
    fs::create_directories(root_.PathOf("300/task/301"));
    fs::create_directories(root_.PathOf("300/fd"));
    root_.Write("300/stat", Stat(300, 'S', "python3"));
    root_.Write("300/task/300/stat", Stat(300, 'S', "python3"));
    root_.Write("300/task/301/comm", "pt_loader\n");
    SetThread('D', 9);
    root_.Write("300/task/301/syscall", std::to_string(SYS_read) + " 0x5 0x0 0x0\n");
    root_.Write("300/task/301/wchan", "request_wait_answer");
    root_.Write("300/mountinfo", "40 22 0:45 / /mnt/ckpt rw - fuse.sshfs h:/ rw\n");
    fs::create_symlink("/mnt/ckpt/step-9.pt", root_.PathOf("300/fd/5"));
  }

  static std::string Stat(int tid, char state, const std::string& comm) {
    return std::to_string(tid) + " (" + comm + ") " + state +
           " 1 1 1 0 -1 4194560 100 0 0 0 70 30 0 0 20 0 3 0 777 1000 100\n";
  }
  void SetThread(char state, int switches) {
    root_.Write("300/task/301/stat", Stat(301, state, "pt_loader"));
    root_.Write("300/task/301/status", "voluntary_ctxt_switches:\t" + std::to_string(switches) +
                                           "\nnonvoluntary_ctxt_switches:\t0\n");
  }
  // Ticks every second for `seconds`, each look run at once.
  void Run(BlockedWatch& watch, int seconds) {
    for (int second = 0; second < seconds; ++second) {
      watch.Tick(env_.SteadyNow(), {{300, 777, "python3", 2}});
      env_.StepPool();
      env_.Advance(std::chrono::seconds(1));
    }
  }

  TempDir root_;
  FakeEnv env_;
  std::vector<std::string> lines_;
  BlockedWatch::Emit Keep() {
    return [this](const std::vector<BlockedWatch::Report>& reports) {
      for (const BlockedWatch::Report& report : reports) {
        EXPECT_EQ(report.pid, 300);
        lines_.push_back(report.line);
      }
    };
  }
};

TEST_F(BlockedWatchTest, AThreadStuckOnAFuseReadIsOneLineNamingItsRankCallAndFile) {
  BlockedWatch watch(env_, Keep());
  watch.set_after(std::chrono::seconds(10));
  Run(watch, 9);
  EXPECT_TRUE(lines_.empty());
  Run(watch, 40);
  ASSERT_EQ(lines_.size(), 1U);
  EXPECT_EQ(lines_[0],
            "[rank2]: trainwatch: python3 (pid 300, thread 301 pt_loader) has been blocked in "
            "the kernel for 10 s, never woken: read(fd 5: /mnt/ckpt/step-9.pt, on fuse.sshfs at "
            "/mnt/ckpt) in request_wait_answer");
  EXPECT_EQ(watch.looks(), 25U);  // one look every 2 s
}

TEST_F(BlockedWatchTest, AThreadWokenBetweenLooksIsNotStuck) {
  BlockedWatch watch(env_, Keep());
  watch.set_after(std::chrono::seconds(10));
  for (int second = 0; second < 60; ++second) {
    SetThread('D', second);  // each I/O completes: a switch
    watch.Tick(env_.SteadyNow(), {{300, 777, "python3", 2}});
    env_.StepPool();
    env_.Advance(std::chrono::seconds(1));
  }
  EXPECT_TRUE(lines_.empty());
}

TEST_F(BlockedWatchTest, APidNowAnotherProcessIsNotLookedAt) {
  BlockedWatch watch(env_, Keep());
  watch.set_after(std::chrono::seconds(4));
  for (int second = 0; second < 20; ++second) {
    watch.Tick(env_.SteadyNow(), {{300, 123, "python3", 2}});  // started at 123, not 777
    env_.StepPool();
    env_.Advance(std::chrono::seconds(1));
  }
  EXPECT_TRUE(lines_.empty());
}

TEST_F(BlockedWatchTest, ALookThatNeverEndsHoldsTheNextBackOnlyUntilItsDeadline) {
  BlockedWatch watch(env_, Keep());
  env_.HoldPool();  // the look's /proc reads do not return
  watch.Tick(env_.SteadyNow(), {{300, 777, "python3", 2}});
  env_.Advance(std::chrono::seconds(30));
  watch.Tick(env_.SteadyNow(), {{300, 777, "python3", 2}});
  EXPECT_EQ(watch.looks(), 1U);
  env_.Advance(BlockedWatch::kLookDeadline);
  watch.Tick(env_.SteadyNow(), {{300, 777, "python3", 2}});
  EXPECT_EQ(watch.looks(), 2U);
  EXPECT_EQ(watch.stalled_looks(), 1U);
  // Blind since the stalled look began (the watcher's health).
  EXPECT_EQ(watch.StalledFor(env_.SteadyNow()),
            std::chrono::seconds(30) + BlockedWatch::kLookDeadline);
  env_.StepPool();  // the stalled look ends at last: it changes nothing
  EXPECT_TRUE(watch.looking());
  EXPECT_TRUE(watch.StalledFor(env_.SteadyNow()).has_value());
  env_.StepPool();  // the next one ends: the watch sees again
  EXPECT_FALSE(watch.looking());
  EXPECT_FALSE(watch.StalledFor(env_.SteadyNow()).has_value());
}

}  // namespace
}  // namespace trainwatch::watch
