// Runs the real binary over the real tool outputs and logs in ../shared/fixtures: failure
// outputs (Ascend error codes, Xid dmesg, habanalabs init failure, lost GPUs, a ROCm GPU hang
// glued to a progress bar) must raise an alarm; healthy tool output (hl-smi, nvidia-smi,
// npu-smi, docker, clean driver loads, progress bars) must not. Skips without ../shared.
#include <gtest/gtest.h>

#include <filesystem>

#include "support/run_binary.h"

namespace trainwatch {
namespace {

namespace fs = std::filesystem;

struct Fixture {
  const char* path;  // under shared/fixtures
  const char* tag;
  bool alarm;
};

const Fixture kFixtures[] = {
    {"ascend/err-E39999-aicpu.log", "train", true},
    {"ascend/err-EE1002-stream-sync-timeout.log", "train", true},
    {"ascend/err-EE9999-event-wait-timeout.log", "train", true},
    {"ascend/err-EH9999-task-timeout.log", "train", true},
    {"ascend/err-EI0002-hccl-notify-timeout.log", "train", true},
    {"ascend/err-EI0006-hccl-socket-timeout.log", "train", true},
    {"ascend/err-EZ9999-aicore.log", "train", true},
    {"ascend/npu-smi-device-busy.txt", "train", false},
    {"ascend/npu-smi-info-310b4-nohbm-23.0.0.txt", "train", false},
    {"ascend/npu-smi-info-910b2c-23.0.2.1.txt", "train", false},
    {"ascend/npu-smi-info-910b4-24.1.rc1.txt", "train", false},
    {"ascend/npu-smi-info-ascend910-a3-25.2.0.txt", "train", false},
    {"docker/docker-inspect.json", "train", false},
    {"docker/docker-ps-no-daemon.stderr", "train", false},
    {"docker/docker-stats-no-stream.txt", "train", false},
    {"habana/dmesg-habanalabs-boot-gaudi1.txt", "kmsg", false},
    {"habana/journal-habanalabs-gaudi2-load.txt", "kmsg", false},
    {"habana/dmesg-habanalabs-init-failure.txt", "kmsg", true},
    {"habana/habana_logs/spdlog-permission-denied.stderr.txt", "train", true},
    {"habana/habana_logs/synapse-console-errors.log", "train", true},
    {"habana/habana_logs/synapse-console-errors.log", "habana", true},
    {"habana/hl-smi.txt", "train", false},
    {"habana/hl-smi-1.20-with-process.txt", "train", false},
    {"habana/hl-smi-q.txt", "train", false},
    {"habana/hl-smi-query-aip.csv", "train", false},
    {"nvidia/dmesg-xid-119-gsp-timeout.log", "kmsg", true},
    {"nvidia/dmesg-xid-13-109-ctime.log", "kmsg", true},
    {"nvidia/dmesg-xid-13-43.log", "kmsg", true},
    {"nvidia/dmesg-xid-45-hung-task.log", "kmsg", true},
    {"nvidia/dmesg-xid-79-sxid.log", "kmsg", true},
    {"nvidia/nvidia-smi-gpu-lost.stderr.txt", "train", true},
    {"nvidia/nvidia-smi-no-driver.txt", "train", true},
    {"nvidia/nvidia-smi-inforom-corrupted.txt", "train", false},  // a warning only
    {"nvidia/nvidia-smi.txt", "train", false},
    {"nvidia/nvidia-smi-q.txt", "train", false},
    {"nvidia/nvidia-smi-q-hw-slowdown.txt", "train", false},
    {"nvidia/nvidia-smi-query-gpu.csv", "train", false},
    {"progress/hf-trainer-tqdm.log", "train", true},
    {"progress/keras2-progbar-verbose1-pipe.txt", "train", false},
    {"progress/keras3-progbar-verbose1-rendered.txt", "train", false},
    {"progress/lightning-progress-fit-stopped.log", "train", false},
    {"progress/lightning-progress-newlines.log", "train", false},
    {"progress/tqdm-file-stalled-no-newline.log", "train", false},
    {"progress/tqdm-file-postfix-lightning-style.log", "train", false},
};

class FixturesTest : public ::testing::TestWithParam<Fixture> {};

TEST_P(FixturesTest, AlarmsOnFailuresOnly) {
  const fs::path file = fs::path(TRAINWATCH_TEST_SHARED_DIR) / "fixtures" / GetParam().path;
  if (!fs::exists(file)) {
    GTEST_SKIP() << "no fixture at " << file
                 << ": the shared/ folder sits beside the checkout only in development and CI";
  }
  const auto run =
      testing::RunBinary({testing::TrainwatchBinary(), "scan", "--rules", TRAINWATCH_TEST_RULES_DIR,
                          "--tag", GetParam().tag, file.string()});
  ASSERT_FALSE(run.timed_out);
  EXPECT_EQ(run.exit_code, GetParam().alarm ? 1 : 0) << run.out << run.err;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FixturesTest, ::testing::ValuesIn(kFixtures),
                         [](const ::testing::TestParamInfo<Fixture>& param_info) {
                           std::string name = std::string(param_info.param.tag) + "_";
                           for (const char* c = param_info.param.path; *c != '\0'; ++c) {
                             name += std::isalnum(static_cast<unsigned char>(*c)) ? *c : '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace trainwatch
