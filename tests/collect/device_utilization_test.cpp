#include "collect/device_utilization.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

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

TEST(DeviceUtilization, ARanksDeviceIsTheOneItsBindingNames) {
  const std::vector<DeviceUtilization> gpus = PairSamples(
      "nvidia-smi", {{0, 99}, {1, 98}, {2, 5}, {3, 97}}, {{0, 99}, {1, 97}, {2, 4}, {3, 99}});
  using Binding = std::vector<std::pair<std::string, std::string>>;
  const DeviceUtilization* one = DeviceOfRank(gpus, {{"CUDA_VISIBLE_DEVICES", "2"}}, 0);
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->index, 2);
  // A list: the local rank's entry of it; none set: the local rank's own device.
  EXPECT_EQ(DeviceOfRank(gpus, {{"CUDA_VISIBLE_DEVICES", "3,1"}}, 1)->index, 1);
  EXPECT_EQ(DeviceOfRank(gpus, Binding{}, 3)->index, 3);
  // What does not say: no local rank, a UUID, a list shorter than the local rank, a device
  // that did not answer, another tool's variable alone.
  EXPECT_EQ(DeviceOfRank(gpus, Binding{}, std::nullopt), nullptr);
  EXPECT_EQ(DeviceOfRank(gpus, {{"CUDA_VISIBLE_DEVICES", "GPU-5d1c3e2a"}}, 0), nullptr);
  EXPECT_EQ(DeviceOfRank(gpus, {{"CUDA_VISIBLE_DEVICES", "0,1"}}, 2), nullptr);
  EXPECT_EQ(DeviceOfRank(gpus, {{"CUDA_VISIBLE_DEVICES", "7"}}, 0), nullptr);
  EXPECT_EQ(DeviceOfRank(gpus, {{"HABANA_VISIBLE_DEVICES", "3"}}, 1)->index, 1);
  // A container given some of the host's GPUs numbers them from 0.
  EXPECT_EQ(DeviceOfRank(gpus, {{"NVIDIA_VISIBLE_DEVICES", "2,3"}}, 0), nullptr);
  EXPECT_EQ(DeviceOfRank(gpus, {{"NVIDIA_VISIBLE_DEVICES", "all"}}, 1)->index, 1);
  // Gaudi: modules are not hl-smi's indices.
  const std::vector<DeviceUtilization> hpus = PairSamples("hl-smi", {{0, 90}}, {{0, 91}});
  EXPECT_EQ(DeviceOfRank(hpus, {{"HABANA_VISIBLE_MODULES", "0"}}, 0), nullptr);
  EXPECT_EQ(DeviceOfRank(hpus, {{"HABANA_VISIBLE_DEVICES", "0"}}, 5)->index, 0);
  EXPECT_EQ(DeviceOfRank({}, Binding{}, 0), nullptr);
}

TEST(DeviceUtilization, QueriesEveryToolInItsCsvMode) {
  const std::vector<config::CommandConfig> commands = DeviceUtilizationCommands();
  ASSERT_EQ(commands.size(), 3u);
  EXPECT_EQ(commands[0].name, "hl-smi-utilization");
  EXPECT_EQ(commands[1].argv[1], "--query-gpu=index,utilization.gpu");
  EXPECT_EQ(commands[2].argv, (std::vector<std::string>{"npu-smi", "info"}));
}

// A table in the layout of npu-smi 23 on a 910B (two rows per chip, the device its NPU), with
// a process table after it whose rows must not read as chips.
constexpr const char* kNpuSmi910B =
    R"(+----------------------------+---------------+------------------------------------------+
| npu-smi 23.0.6              Version: 23.0.6                                             |
+----------------------------+---------------+------------------------------------------+
| NPU   Name                 | Health        | Power(W)    Temp(C)   Hugepages-Usage(page)|
| Chip                       | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)|
+============================+===============+==========================================+
| 0     910B3                | OK            | 301.2       58        0    / 0          |
| 0                          | 0000:C1:00.0  | 97          0    / 0  61002/ 65536        |
+============================+===============+==========================================+
| 1     910B3                | Warning       | 95.0        41        0    / 0          |
| 0                          | 0000:01:00.0  | 3           0    / 0  3/ 65536            |
+============================+===============+==========================================+
| NPU     Chip               | Process id    | Process name      | Process memory(MB)   |
+============================+===============+==========================================+
| 0       0                  | 77          | python3.9         | 60000                  |
+============================+===============+==========================================+
)";

TEST(DeviceUtilization, ReadsTheAICoreColumnOfNpuSmiInfo) {
  EXPECT_EQ(ParseNpuSmiInfo(kNpuSmi910B), (std::map<int, double>{{0, 97}, {1, 3}}));
  EXPECT_EQ(ParseUtilization("npu-smi", kNpuSmi910B), ParseNpuSmiInfo(kNpuSmi910B));
  EXPECT_TRUE(
      ParseNpuSmiInfo("dcmi model initialized failed, because the device is used.\n").empty());
}

std::string AscendFixture(const std::string& name) {
  std::ifstream in(std::string(TRAINWATCH_TEST_SHARED_DIR) + "/fixtures/ascend/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(DeviceUtilization, ReadsEveryRealNpuSmiLayout) {
  const std::string b2c = AscendFixture("npu-smi-info-910b2c-23.0.2.1.txt");
  if (b2c.empty()) {
    GTEST_SKIP() << "../shared/fixtures is absent";
  }
  EXPECT_EQ(ParseNpuSmiInfo(b2c), (std::map<int, double>{{0, 0}, {1, 0}}));
  // A3: two dies per NPU, each its own device (Phy-ID).
  EXPECT_EQ(ParseNpuSmiInfo(AscendFixture("npu-smi-info-ascend910-a3-25.2.0.txt")).size(), 4u);
  // 310B4: "Chip Device" columns, no HBM.
  EXPECT_EQ(ParseNpuSmiInfo(AscendFixture("npu-smi-info-310b4-nohbm-23.0.0.txt")),
            (std::map<int, double>{{0, 0}}));
  EXPECT_EQ(ParseNpuSmiInfo(AscendFixture("npu-smi-info-910b4-24.1.rc1.txt")).size(), 1u);
}

}  // namespace
}  // namespace trainwatch::collect
