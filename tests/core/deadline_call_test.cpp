// A call that never returns (here, opening a FIFO nobody writes: the kernel holds the thread,
// as a hung network file system does) is given up on at its deadline and left behind; the
// left-behind ones are counted and capped per budget (one user's wedged reads never refuse
// another's) and, as a backstop, for the whole process, and counted out when they return.
#include "core/deadline_call.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "support/fifo_release.h"
#include "support/temp_dir.h"

namespace trainwatch {
namespace {

using namespace std::chrono_literals;

// Blocks in open(2) until someone opens `fifo` for writing.
std::function<int()> BlockOn(const std::string& fifo) {
  return [fifo] {
    const int fd = ::open(fifo.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ::close(fd);
    }
    return 7;
  };
}

bool CountIs(std::size_t expected) {
  for (int i = 0; i < 500 && StuckDeadlineCalls() != expected; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  return StuckDeadlineCalls() == expected;
}

// `count` FIFOs in `dir`; released (every left-behind open returns) when the test ends.
class Fifos {
 public:
  Fifos(const testing::TempDir& dir, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
      paths_.push_back(dir.PathOf("fifo" + std::to_string(i)));
      EXPECT_EQ(::mkfifo(paths_.back().c_str(), 0600), 0);
    }
  }
  ~Fifos() { ReleaseAll(); }
  void ReleaseAll() {
    for (const std::string& fifo : paths_) {
      testing::ReleaseFifoReader(fifo);
    }
    paths_.clear();
  }
  const std::string& operator[](std::size_t i) const { return paths_[i]; }

 private:
  std::vector<std::string> paths_;
};

TEST(DeadlineCall, ReturnsTheResultOfWorkThatEnds) {
  std::string why;
  EXPECT_EQ(CallWithDeadline<int>([] { return 42; }, 1s, DeadlineBudget(), why), 42);
  EXPECT_TRUE(why.empty());
}

TEST(DeadlineCall, LeavesBehindWorkPastItsDeadlineAndCapsHowManyPerBudget) {
  testing::TempDir dir;
  Fifos fifos(dir, 2);
  const DeadlineBudget budget(2);
  std::string why;
  const auto started = std::chrono::steady_clock::now();
  EXPECT_FALSE(CallWithDeadline<int>(BlockOn(fifos[0]), 100ms, budget, why).has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  EXPECT_NE(why.find("gave up after 100 ms"), std::string::npos) << why;
  EXPECT_EQ(budget.stuck(), 1u);
  EXPECT_EQ(StuckDeadlineCalls(), 1u);
  EXPECT_FALSE(CallWithDeadline<int>(BlockOn(fifos[1]), 10ms, budget, why).has_value());
  EXPECT_EQ(budget.stuck(), 2u);
  // The budget's cap: no more threads left behind for it; refused at once, even work that
  // would end.
  EXPECT_FALSE(CallWithDeadline<int>([] { return 1; }, 1s, budget, why).has_value());
  EXPECT_TRUE(why.starts_with(kNotTried)) << why;
  // Another budget (another user's reads, the peer watcher's) still runs.
  why.clear();
  EXPECT_EQ(CallWithDeadline<int>([] { return 3; }, 1s, DeadlineBudget(2), why), 3) << why;
  // They return at last (the file system answers): counted out, and calls run again.
  fifos.ReleaseAll();
  EXPECT_TRUE(CountIs(0)) << StuckDeadlineCalls();
  EXPECT_EQ(budget.stuck(), 0u);
  EXPECT_EQ(CallWithDeadline<int>([] { return 1; }, 1s, budget, why), 1);
}

TEST(DeadlineCall, TheProcessWideCapIsABackstopOverEveryBudget) {
  testing::TempDir dir;
  Fifos fifos(dir, kMaxStuckCalls);
  std::string why;
  for (std::size_t i = 0; i < kMaxStuckCalls; ++i) {
    EXPECT_FALSE(CallWithDeadline<int>(BlockOn(fifos[i]), 1ms, DeadlineBudget(1), why).has_value());
  }
  EXPECT_EQ(StuckDeadlineCalls(), kMaxStuckCalls);
  EXPECT_FALSE(CallWithDeadline<int>([] { return 1; }, 1s, DeadlineBudget(), why).has_value());
  EXPECT_TRUE(why.starts_with(kNotTried)) << why;
  fifos.ReleaseAll();
  EXPECT_TRUE(CountIs(0)) << StuckDeadlineCalls();
}

TEST(DeadlineCall, EachUserHasABudgetOfTheirOwnKeptWhileItsReadsAreStuck) {
  EXPECT_EQ(UserDeadlineBudget(1000), UserDeadlineBudget(1000));
  EXPECT_FALSE(UserDeadlineBudget(1000) == UserDeadlineBudget(1001));
  EXPECT_EQ(UserDeadlineBudget(std::nullopt), UserDeadlineBudget(std::nullopt));
  EXPECT_FALSE(UserDeadlineBudget(std::nullopt) == UserDeadlineBudget(1000));

  testing::TempDir dir;
  Fifos fifos(dir, kStuckCallsPerBudget);
  const DeadlineBudget user = UserDeadlineBudget(4242);
  std::string why;
  for (std::size_t i = 0; i < kStuckCallsPerBudget; ++i) {
    EXPECT_FALSE(CallWithDeadline<int>(BlockOn(fifos[i]), 1ms, user, why).has_value());
  }
  // More users than are kept come and go: the one with reads stuck keeps its budget (it does
  // not start afresh), and their reads are still refused while every other user's run.
  for (uid_t other = 5000; other < 5000 + 2 * kMaxUserBudgets; ++other) {
    UserDeadlineBudget(other);
  }
  EXPECT_EQ(UserDeadlineBudget(4242), user);
  EXPECT_FALSE(
      CallWithDeadline<int>([] { return 1; }, 1s, UserDeadlineBudget(4242), why).has_value());
  EXPECT_TRUE(why.starts_with(kNotTried)) << why;
  EXPECT_EQ(CallWithDeadline<int>([] { return 2; }, 1s, UserDeadlineBudget(4243), why), 2);
  fifos.ReleaseAll();
  EXPECT_TRUE(CountIs(0)) << StuckDeadlineCalls();
}

TEST(DeadlineCall, AProcessIsItsRealUsers) {
  testing::TempDir proc;
  std::filesystem::create_directories(proc.path() / "42");
  // A setuid helper: real 1000, effective 0. The real uid is whose it is.
  proc.Write("42/status", "Name:\tpython3\nPid:\t42\nUid:\t1000\t0\t0\t0\nGid:\t1000\t1000\n");
  EXPECT_EQ(ProcessRealUid(proc.path().string(), 42), 1000u);
  EXPECT_EQ(ProcessRealUid(proc.path().string(), 43), std::nullopt);  // gone
  EXPECT_EQ(ProcessRealUid("/proc", ::getpid()), ::getuid());
}

}  // namespace
}  // namespace trainwatch
