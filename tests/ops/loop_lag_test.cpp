#include "ops/loop_lag.h"

#include <gtest/gtest.h>

namespace trainwatch::ops {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kPeriod{1000};

TEST(LoopLag, OnTimeTicksAreNoLag) {
  LoopLag lag;
  SteadyTime now{seconds(1000)};
  EXPECT_EQ(lag.WorstRecently(now), milliseconds(0));
  for (int i = 0; i < 200; ++i) {
    lag.OnTimer(now, kPeriod);
    now += kPeriod;
  }
  EXPECT_EQ(lag.WorstRecently(now), milliseconds(0));
}

TEST(LoopLag, ALateTickIsRememberedForAMinuteOrTwoThenForgotten) {
  LoopLag lag;
  SteadyTime now{seconds(1000)};
  lag.OnTimer(now, kPeriod);
  now += milliseconds(3500);  // the loop was held 2.5 s
  lag.OnTimer(now, kPeriod);
  EXPECT_EQ(lag.WorstRecently(now), milliseconds(2500));
  for (int i = 0; i < 70; ++i) {
    now += kPeriod;
    lag.OnTimer(now, kPeriod);
  }
  EXPECT_EQ(lag.WorstRecently(now), milliseconds(2500)) << "within the window before";
  for (int i = 0; i < 60; ++i) {
    now += kPeriod;
    lag.OnTimer(now, kPeriod);
  }
  EXPECT_EQ(lag.WorstRecently(now), milliseconds(0));
}

TEST(LoopLag, ALoopHeldForMinutesShowsThatHold) {
  LoopLag lag;
  SteadyTime now{seconds(1000)};
  lag.OnTimer(now, kPeriod);
  now += std::chrono::minutes(5);
  lag.OnTimer(now, kPeriod);
  EXPECT_EQ(lag.WorstRecently(now), std::chrono::minutes(5) - kPeriod);
  EXPECT_EQ(lag.WorstRecently(now + std::chrono::minutes(3)), milliseconds(0))
      << "no tick since: nothing new is known late";
}

}  // namespace
}  // namespace trainwatch::ops
