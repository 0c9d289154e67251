#include "collect/blocked_threads.h"

#include <gtest/gtest.h>

namespace trainwatch::collect {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

SteadyTime At(int second) { return SteadyTime{} + seconds(second); }

TEST(BlockedThreads, AThreadInDNeverWokenIsToldOnceAfterTheThreshold) {
  BlockedThreads threads(seconds(30));
  std::optional<BlockedThreads::Stuck> told;
  for (int second = 0; second <= 60; second += 2) {
    auto stuck = threads.Observe(100, {{100, 'S', 0}, {101, 'D', 7}}, At(second));
    if (stuck) {
      EXPECT_FALSE(told) << "told twice, at " << second;
      told = stuck;
      EXPECT_EQ(second, 30);
    }
  }
  ASSERT_TRUE(told);
  EXPECT_EQ(told->pid, 100);
  EXPECT_EQ(told->tid, 101);
  EXPECT_EQ(told->blocked, seconds(30));
}

TEST(BlockedThreads, HeavyIOInDThatIsWokenIsNeverStuck) {
  BlockedThreads threads(seconds(30));
  // In D at every look for ten minutes, but switched out between looks: each I/O completes.
  for (int second = 0; second <= 600; second += 2) {
    EXPECT_FALSE(
        threads.Observe(100, {{100, 'D', static_cast<std::uint64_t>(second)}}, At(second)));
  }
  // Short bursts of D among running.
  for (int second = 0; second <= 600; second += 2) {
    const char state = (second / 2) % 5 == 0 ? 'R' : 'D';
    EXPECT_FALSE(threads.Observe(200, {{200, state, 5}}, At(second)));
  }
}

TEST(BlockedThreads, AWakeEndsTheEpisodeAndTheNextStuckWaitIsToldAgain) {
  BlockedThreads threads(seconds(10));
  EXPECT_FALSE(threads.Observe(1, {{1, 'D', 3}}, At(0)));
  EXPECT_TRUE(threads.Observe(1, {{1, 'D', 3}}, At(10)));
  EXPECT_FALSE(threads.Observe(1, {{1, 'D', 3}}, At(20)));
  EXPECT_FALSE(threads.Observe(1, {{1, 'S', 4}}, At(22)));  // freed
  EXPECT_FALSE(threads.Observe(1, {{1, 'D', 9}}, At(24)));
  const auto again = threads.Observe(1, {{1, 'D', 9}}, At(34));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->blocked, seconds(10));
}

TEST(BlockedThreads, TheMainThreadIsNamedBeforeOthersAndAProcessOnce) {
  BlockedThreads threads(seconds(10));
  EXPECT_FALSE(threads.Observe(50, {{50, 'D', 1}, {51, 'D', 1}, {52, 'D', 1}}, At(0)));
  const auto stuck = threads.Observe(50, {{50, 'D', 1}, {51, 'D', 1}, {52, 'D', 1}}, At(12));
  ASSERT_TRUE(stuck);
  EXPECT_EQ(stuck->tid, 50);
  // The main thread freed, the others still stuck: the same episode.
  EXPECT_FALSE(threads.Observe(50, {{50, 'S', 2}, {51, 'D', 1}, {52, 'D', 1}}, At(14)));
}

TEST(BlockedThreads, GoneProcessesAreForgotten) {
  BlockedThreads threads(seconds(10));
  threads.Observe(1, {{1, 'D', 1}}, At(0));
  threads.Observe(2, {{2, 'D', 1}}, At(0));
  threads.KeepOnly({2});
  EXPECT_EQ(threads.size(), 1U);
  // A new process with pid 1 starts its wait from scratch.
  EXPECT_FALSE(threads.Observe(1, {{1, 'D', 1}}, At(5)));
  EXPECT_FALSE(threads.Observe(1, {{1, 'D', 1}}, At(12)));
  EXPECT_TRUE(threads.Observe(1, {{1, 'D', 1}}, At(15)));
}

}  // namespace
}  // namespace trainwatch::collect
