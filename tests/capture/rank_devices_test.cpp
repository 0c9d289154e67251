// Each rank's device, where its binding names one no other rank here shares.
#include "capture/rank_devices.h"

#include <gtest/gtest.h>

namespace trainwatch::capture {
namespace {

RankEvidence Rank(int rank, std::optional<int> local_rank, const std::string& visible = "") {
  RankEvidence evidence;
  evidence.process.rank = rank;
  evidence.process.identity.rank = rank;
  evidence.process.identity.local_rank = local_rank;
  if (!visible.empty()) {
    evidence.process.identity.devices = {{"CUDA_VISIBLE_DEVICES", visible}};
  }
  return evidence;
}

TEST(RankDevices, EachRankGetsTheDeviceItAloneDrives) {
  RankReport report;
  report.devices = collect::PairSamples("nvidia-smi", {{0, 99}, {1, 3}, {2, 97}, {3, 98}},
                                        {{0, 98}, {1, 2}, {2, 99}, {3, 99}});
  report.ranks = {Rank(0, 0), Rank(1, 1), Rank(2, 0, "2"), Rank(3, 1, "2"), Rank(4, 3)};
  report.ranks[4].alive = false;  // exited: its device is no longer its own
  AttachRankDevices(report);
  ASSERT_TRUE(report.ranks[0].device);
  EXPECT_EQ(report.ranks[0].device->index, 0);
  ASSERT_TRUE(report.ranks[1].device);
  EXPECT_EQ(report.ranks[1].device->index, 1);
  EXPECT_DOUBLE_EQ(report.ranks[1].device->first, 3);
  // Ranks 2 and 3 both bound to device 2: no one rank's.
  EXPECT_FALSE(report.ranks[2].device);
  EXPECT_FALSE(report.ranks[3].device);
  EXPECT_FALSE(report.ranks[4].device);
}

}  // namespace
}  // namespace trainwatch::capture
