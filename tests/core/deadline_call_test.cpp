// A call that never returns (here, opening a FIFO nobody writes: the kernel holds the thread,
// as a hung network file system does) is given up on at its deadline and left behind; the
// left-behind ones are counted and capped, and counted out when they return at last.
#include "core/deadline_call.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

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

void Release(const std::string& fifo) {
  const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
  }
}

bool CountIs(std::size_t expected) {
  for (int i = 0; i < 500 && StuckDeadlineCalls() != expected; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  return StuckDeadlineCalls() == expected;
}

TEST(DeadlineCall, ReturnsTheResultOfWorkThatEnds) {
  std::string why;
  EXPECT_EQ(CallWithDeadline<int>([] { return 42; }, 1s, why), 42);
  EXPECT_TRUE(why.empty());
}

TEST(DeadlineCall, LeavesBehindWorkPastItsDeadlineAndCapsHowMany) {
  testing::TempDir dir;
  std::vector<std::string> fifos;
  for (std::size_t i = 0; i < kMaxStuckCalls; ++i) {
    fifos.push_back(dir.PathOf("fifo" + std::to_string(i)));
    ASSERT_EQ(::mkfifo(fifos.back().c_str(), 0600), 0);
  }
  std::string why;
  const auto started = std::chrono::steady_clock::now();
  EXPECT_FALSE(CallWithDeadline<int>(BlockOn(fifos[0]), 100ms, why).has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  EXPECT_NE(why.find("gave up after 100 ms"), std::string::npos) << why;
  EXPECT_EQ(StuckDeadlineCalls(), 1u);
  for (std::size_t i = 1; i < kMaxStuckCalls; ++i) {
    EXPECT_FALSE(CallWithDeadline<int>(BlockOn(fifos[i]), 10ms, why).has_value());
  }
  EXPECT_EQ(StuckDeadlineCalls(), kMaxStuckCalls);
  // The cap: no more threads left behind; refused at once, even work that would end.
  EXPECT_FALSE(CallWithDeadline<int>([] { return 1; }, 1s, why).has_value());
  EXPECT_NE(why.find("not tried"), std::string::npos) << why;
  // They return at last (the file system answers): counted out, and calls run again.
  for (const std::string& fifo : fifos) {
    Release(fifo);
  }
  EXPECT_TRUE(CountIs(0)) << StuckDeadlineCalls();
  EXPECT_EQ(CallWithDeadline<int>([] { return 1; }, 1s, why), 1);
}

}  // namespace
}  // namespace trainwatch
