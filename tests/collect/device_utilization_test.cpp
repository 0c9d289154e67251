#include "collect/device_utilization.h"

#include <gtest/gtest.h>

namespace trainwatch::collect {
namespace {

TEST(DeviceUtilization, ReadsBothToolsCsv) {
  // hl-smi -Q index,utilization.aip -f csv,noheader prints units; nvidia-smi's nounits none.
  EXPECT_EQ(ParseUtilizationCsv("0, 0 %\n1, 97 %\n"), (std::map<int, double>{{0, 0}, {1, 97}}));
  EXPECT_EQ(ParseUtilizationCsv("0, 98\n3, 12.5\nNo devices were found\n"),
            (std::map<int, double>{{0, 98}, {3, 12.5}}));
  EXPECT_TRUE(ParseUtilizationCsv("index, utilization.gpu [%]\n").empty());
}

TEST(DeviceUtilization, BusyInBothSamplesIsNamedAsALongStep) {
  const std::vector<DeviceUtilization> devices =
      PairSamples("nvidia-smi", {{0, 100}, {1, 97}, {2, 99}}, {{0, 98}, {1, 20}});
  ASSERT_EQ(devices.size(), 2u);  // device 2 answered once only
  EXPECT_EQ(BusyDevicesNote(devices, 2.04),
            "nvidia-smi device(s) 0 at 98-100% utilisation in both samples, 2.0 s apart: a long "
            "compile or step rather than a hang?");
  EXPECT_EQ(BusyDevicesNote(PairSamples("hl-smi", {{0, 5}}, {{0, 95}}), 2), "");
}

TEST(DeviceUtilization, QueriesEveryToolInItsCsvMode) {
  const std::vector<config::CommandConfig> commands = DeviceUtilizationCommands();
  ASSERT_EQ(commands.size(), 2u);
  EXPECT_EQ(commands[0].name, "hl-smi-utilization");
  EXPECT_EQ(commands[1].argv[1], "--query-gpu=index,utilization.gpu");
}

}  // namespace
}  // namespace trainwatch::collect
