// FindStuckRanks on a /proc of our own, its samples stepped by the sleep callback: a rank in D
// that is woken between samples (heavy checkpoint I/O) is busy, one never woken is stuck.
#include "collect/stuck_ranks.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/temp_dir.h"

namespace trainwatch::collect {
namespace {

using trainwatch::testing::TempDir;
namespace fs = std::filesystem;

class FakeProc {
 public:
  // A rank process (RANK in its environment) with one thread, its main one.
  void AddRank(int pid, int rank) {
    fs::create_directories(root_.PathOf(Task(pid)));
    root_.Write(std::to_string(pid) + "/environ", "RANK=" + std::to_string(rank) + '\0');
    root_.Write(std::to_string(pid) + "/wchan", "do_epoll_wait");  // the main thread's
    root_.Write(Task(pid) + "/wchan", "request_wait_answer");      // the stuck one's
    Set(pid, 'D', 10);
  }
  void Set(int pid, char state, int switches) {
    const std::string stat = std::to_string(pid) + " (python3) " + state +
                             " 1 1 1 0 -1 4194560 100 0 0 0 70 30 0 0 20 0 1 0 555 1000 100\n";
    root_.Write(std::to_string(pid) + "/stat", stat);
    root_.Write(Task(pid) + "/stat", stat);
    root_.Write(Task(pid) + "/status", "Name:\tpython3\nvoluntary_ctxt_switches:\t" +
                                           std::to_string(switches) +
                                           "\nnonvoluntary_ctxt_switches:\t0\n");
  }
  std::string root() const { return root_.path().string(); }

 private:
  static std::string Task(int pid) { return std::to_string(pid) + "/task/" + std::to_string(pid); }
  TempDir root_;
};

TEST(FindStuckRanks, InDAtEverySampleAndNeverWokenIsStuckWokenIsBusy) {
  FakeProc proc;
  proc.AddRank(100, 0);  // a dead file system's read: never woken
  proc.AddRank(200, 1);  // a checkpoint written hard: in D at each sample, woken in between
  proc.AddRank(300, 2);  // leaves D
  int switches = 10;
  const Result<StuckScan> scan =
      FindStuckRanks(proc.root(), 3, std::chrono::milliseconds(500), [&](auto) {
        switches += 25;
        proc.Set(200, 'D', switches);
        proc.Set(300, 'S', switches);
      });
  ASSERT_TRUE(scan.ok()) << scan.error().message;
  EXPECT_EQ(scan->ranks, 3U);
  ASSERT_EQ(scan->stuck.size(), 1U);
  EXPECT_EQ(scan->stuck[0].pid, 100);
  EXPECT_EQ(scan->stuck[0].label, "rank 0");
  EXPECT_EQ(scan->stuck[0].wchan, "request_wait_answer");
  EXPECT_DOUBLE_EQ(scan->stuck[0].seconds, 1.0);
}

}  // namespace
}  // namespace trainwatch::collect
