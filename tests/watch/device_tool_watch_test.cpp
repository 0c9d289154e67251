#include "watch/device_tool_watch.h"

#include <gtest/gtest.h>

namespace trainwatch::watch {
namespace {

using capture::DeviceToolRun;

DeviceToolRun ToolRun(const std::string& tool, bool answered, bool timed_out, bool stuck = false) {
  return {tool, tool + "-q", answered, timed_out, stuck, 10};
}

TEST(DeviceToolWatch, TwoTimeoutsInARowAreToldOnceUntilTheToolAnswers) {
  DeviceToolWatch watch;
  EXPECT_TRUE(watch.Observe({ToolRun("hl-smi", false, true)}).empty());
  const std::vector<std::string> told = watch.Observe({ToolRun("hl-smi", false, true)});
  ASSERT_EQ(told.size(), 1U);
  EXPECT_EQ(told[0],
            "trainwatch: hl-smi (collector hl-smi-q) did not answer within its 10 s deadline, 2 "
            "captures in a row: the device management tool does not answer: the device or its "
            "driver may be wedged");
  EXPECT_TRUE(watch.Observe({ToolRun("hl-smi", false, true)}).empty());
  EXPECT_TRUE(watch.Observe({ToolRun("hl-smi", true, false)}).empty());  // answers: cleared
  EXPECT_TRUE(watch.Observe({ToolRun("hl-smi", false, true)}).empty());
  EXPECT_EQ(watch.Observe({ToolRun("hl-smi", false, true)}).size(), 1U);
}

TEST(DeviceToolWatch, ATimeoutBetweenAnswersIsNothing) {
  DeviceToolWatch watch;
  for (int capture = 0; capture < 10; ++capture) {
    EXPECT_TRUE(watch.Observe({ToolRun("nvidia-smi", capture % 2 == 0, capture % 2 == 1)}).empty());
  }
  // One query of the tool answered in the same capture: the device answers.
  EXPECT_TRUE(
      watch.Observe({ToolRun("nvidia-smi", false, true), ToolRun("nvidia-smi", true, false)})
          .empty());
  EXPECT_TRUE(
      watch.Observe({ToolRun("nvidia-smi", false, true), ToolRun("nvidia-smi", true, false)})
          .empty());
}

TEST(DeviceToolWatch, AToolThatWouldNotDieIsToldAtOnceAndEachToolApart) {
  DeviceToolWatch watch;
  const std::vector<std::string> told =
      watch.Observe({ToolRun("hl-smi", false, false, true), ToolRun("npu-smi", true, false)});
  ASSERT_EQ(told.size(), 1U);
  EXPECT_NE(told[0].find("trainwatch: hl-smi (collector hl-smi-q) would not die when killed at "
                         "its 10 s deadline, stuck in the kernel"),
            std::string::npos)
      << told[0];
  EXPECT_TRUE(watch.Observe({ToolRun("hl-smi", false, false, true)}).empty());
  EXPECT_EQ(watch.Observe({ToolRun("npu-smi", false, true)}).size(), 0U);
  EXPECT_EQ(watch.Observe({ToolRun("npu-smi", false, true)}).size(), 1U);
}

}  // namespace
}  // namespace trainwatch::watch
