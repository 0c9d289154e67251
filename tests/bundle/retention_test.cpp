#include "bundle/retention.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace trainwatch::bundle {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::vector<std::string> Names(const std::vector<BundleFile>& bundles) {
  std::vector<std::string> names;
  names.reserve(bundles.size());
  for (const BundleFile& b : bundles) {
    names.push_back(b.name);
  }
  return names;
}

std::string Bundle(const TempDir& dir, int hour, std::size_t bytes) {
  std::string name = "20261121T" + std::string(hour < 10 ? "0" : "") + std::to_string(hour) +
                     "0000Z_host_rule_id.tar.zst";
  dir.Write(name, std::string(bytes, 'x'));
  return name;
}

TEST(RetentionTest, ListsFinishedBundlesOldestFirstAndNothingElse) {
  TempDir dir;
  Bundle(dir, 12, 10);
  Bundle(dir, 3, 20);
  Bundle(dir, 7, 30);
  dir.Write(".20261121T130000Z_host_rule_id.tar.zst.partial", "half");
  dir.Write(".hidden.tar.zst", "x");
  dir.Write("notes.txt", "x");
  dir.Write("20261121T140000Z.tar.gz", "x");
  dir.Write(".tar.zst", "x");
  fs::create_directory(dir.path() / "20261121T150000Z_dir.tar.zst");
  fs::create_symlink(dir.PathOf("notes.txt"), dir.path() / "20261121T160000Z_link.tar.zst");

  const std::vector<BundleFile> bundles = ListBundles(dir.path().string());
  EXPECT_EQ(Names(bundles), (std::vector<std::string>{"20261121T030000Z_host_rule_id.tar.zst",
                                                      "20261121T070000Z_host_rule_id.tar.zst",
                                                      "20261121T120000Z_host_rule_id.tar.zst"}));
  ASSERT_EQ(bundles.size(), 3u);
  EXPECT_EQ(bundles[0].bytes, 20u);
  EXPECT_EQ(bundles[0].path, dir.PathOf(bundles[0].name));
  EXPECT_TRUE(ListBundles(dir.PathOf("missing")).empty());
}

TEST(RetentionTest, CountLimitLeavesRoomForTheIncomingBundle) {
  TempDir dir;
  for (int hour = 1; hour <= 5; ++hour) {
    Bundle(dir, hour, 100);
  }
  RetentionPolicy policy;
  policy.max_count = 3;
  const std::vector<std::string> deleted = MakeRoom(dir.path().string(), policy, 100);
  EXPECT_EQ(deleted,
            (std::vector<std::string>{dir.PathOf("20261121T010000Z_host_rule_id.tar.zst"),
                                      dir.PathOf("20261121T020000Z_host_rule_id.tar.zst"),
                                      dir.PathOf("20261121T030000Z_host_rule_id.tar.zst")}));
  EXPECT_EQ(ListBundles(dir.path().string()).size(), 2u);
  EXPECT_TRUE(MakeRoom(dir.path().string(), policy, 100).empty());  // already within
}

// A capture's early bundle is replaced by its complete one under the same name: it is not
// one more bundle to make room for, and it is never the one deleted.
TEST(RetentionTest, TheBundleBeingReplacedIsNeitherCountedNorDeleted) {
  TempDir dir;
  for (int hour = 1; hour <= 3; ++hour) {
    Bundle(dir, hour, 100);
  }
  const std::string early = Bundle(dir, 4, 100);
  RetentionPolicy policy;
  policy.max_count = 4;
  EXPECT_TRUE(MakeRoom(dir.path().string(), policy, 100, early).empty());
  policy.max_count = 3;
  EXPECT_EQ(MakeRoom(dir.path().string(), policy, 100, early),
            (std::vector<std::string>{dir.PathOf("20261121T010000Z_host_rule_id.tar.zst")}));
  policy.max_count = 1;
  MakeRoom(dir.path().string(), policy, 100, early);
  EXPECT_EQ(Names(ListBundles(dir.path().string())), (std::vector<std::string>{early}));
}

TEST(RetentionTest, ByteLimitCountsTheIncomingBundle) {
  TempDir dir;
  Bundle(dir, 1, 400);
  Bundle(dir, 2, 300);
  Bundle(dir, 3, 200);
  RetentionPolicy policy;
  policy.max_bytes = 1000;
  // 900 + 100 fits exactly.
  EXPECT_TRUE(MakeRoom(dir.path().string(), policy, 100).empty());
  // 900 + 101 does not: the oldest (400) goes.
  EXPECT_EQ(MakeRoom(dir.path().string(), policy, 101).size(), 1u);
  // 500 + 900: both remaining go, and it fits on its own.
  EXPECT_EQ(MakeRoom(dir.path().string(), policy, 900).size(), 2u);
  EXPECT_TRUE(Fits(dir.path().string(), policy, 1000));
  // Bigger than the whole budget: deleting everything does not help.
  EXPECT_FALSE(Fits(dir.path().string(), policy, 1001));
  policy.max_count = 0;
  EXPECT_FALSE(Fits(dir.path().string(), policy, 1));
}

// A storm as the red team wrote one (cooldown 0, max_count 5): a bundle a minute after an
// unrelated one from the night before. Oldest-first alone deletes the storm's first bundle,
// the root cause, after four more incidents.
TEST(RetentionTest, AStormKeepsItsFirstBundleAndDeletesItsEchoesInstead) {
  TempDir dir;
  Bundle(dir, 1, 10);  // last night: not part of the storm
  std::vector<std::string> storm;
  for (int minute = 0; minute < 12; ++minute) {
    const std::string name = "20261121T12" + std::string(minute < 10 ? "0" : "") +
                             std::to_string(minute) + "00Z_host_rule_id.tar.zst";
    dir.Write(name, "x");
    storm.push_back(name);
  }
  EXPECT_EQ(StormStart(ListBundles(dir.path().string())), 1u);
  RetentionPolicy policy;
  policy.max_count = 5;
  MakeRoom(dir.path().string(), policy, 1);
  EXPECT_EQ(Names(ListBundles(dir.path().string())),
            (std::vector<std::string>{storm[0], storm[9], storm[10], storm[11]}));
  // max_count 1: nothing but the incoming bundle fits, so the first of the storm goes too.
  policy.max_count = 1;
  MakeRoom(dir.path().string(), policy, 1);
  EXPECT_TRUE(ListBundles(dir.path().string()).empty());
}

TEST(RetentionTest, AGapOfMoreThanTenMinutesEndsAStorm) {
  TempDir dir;
  dir.Write("20261121T120000Z_host_rule_id.tar.zst", "x");
  dir.Write("20261121T120900Z_host_rule_id.tar.zst", "x");  // 9 min: same storm
  dir.Write("20261121T122000Z_host_rule_id.tar.zst", "x");  // 11 min: a new one
  dir.Write("20261121T123000Z_host_rule_id.tar.zst", "x");  // 10 min exactly: same
  EXPECT_EQ(StormStart(ListBundles(dir.path().string())), 2u);
  dir.Write("20261121T125000Z_host_rule_id.tar.zst", "x");
  EXPECT_EQ(StormStart(ListBundles(dir.path().string())), 4u);
  EXPECT_EQ(StormStart({}), 0u);
}

TEST(RetentionTest, FitsCountsOlderBundlesAsDeletable) {
  TempDir dir;
  Bundle(dir, 1, 600);
  RetentionPolicy policy;
  policy.max_bytes = 1000;
  policy.max_count = 1;
  EXPECT_TRUE(Fits(dir.path().string(), policy, 1000));
  EXPECT_EQ(ListBundles(dir.path().string()).size(), 1u);  // Fits deletes nothing
}

// The free-space rule against the real disk, relative to its free space now. Other processes
// write to the same disk meanwhile, so the bundles are big next to that noise and the checks
// are about the outcome (enough free, or nothing left to delete) rather than exact counts.
TEST(RetentionTest, MinFreeDeletesOldestUntilTheReserveHolds) {
  TempDir dir;
  constexpr std::size_t kBundle = 8 << 20;
  for (int hour = 1; hour <= 4; ++hour) {
    Bundle(dir, hour, kBundle);
  }
  const std::string path = dir.path().string();
  const std::uint64_t free_now = FreeBytes(path);
  ASSERT_GT(free_now, 0u);
  RetentionPolicy policy;
  policy.max_bytes = UINT64_MAX;
  // Nothing to do while the reserve is far below the free space.
  policy.min_free_bytes = free_now / 2;
  EXPECT_EQ(RequiredFree(path, policy), free_now / 2);
  EXPECT_TRUE(MakeRoom(path, policy, kBundle).empty());

  // Keep half a bundle more than is free now, with a bundle coming: 1.5 bundles' worth must
  // be freed, so the two oldest go (a third if another process fills the disk meanwhile).
  policy.min_free_bytes = free_now + kBundle / 2;
  const std::vector<std::string> deleted = MakeRoom(path, policy, kBundle);
  EXPECT_GE(deleted.size(), 2u);
  EXPECT_LE(deleted.size(), 3u);
  EXPECT_EQ(deleted.front(), dir.PathOf("20261121T010000Z_host_rule_id.tar.zst"));
  const std::vector<BundleFile> left = ListBundles(path);
  ASSERT_FALSE(left.empty());
  EXPECT_EQ(left.back().name, "20261121T040000Z_host_rule_id.tar.zst");

  // A reserve the disk can never give: everything goes, and it still does not fit.
  policy.min_free_bytes = free_now * 4;
  MakeRoom(path, policy, kBundle);
  EXPECT_TRUE(ListBundles(path).empty());
  EXPECT_FALSE(Fits(path, policy, kBundle));
}

TEST(RetentionTest, PercentReserveIsOfTheWholeFileSystemAndTheStricterFormWins) {
  TempDir dir;
  const std::string path = dir.path().string();
  RetentionPolicy policy;
  policy.min_free_percent = 100;
  const std::uint64_t total = RequiredFree(path, policy);
  EXPECT_GE(total, FreeBytes(path));
  policy.min_free_percent = 10;
  EXPECT_NEAR(static_cast<double>(RequiredFree(path, policy)), total / 10.0, 1.0);
  policy.min_free_bytes = total;  // stricter than 10 %
  EXPECT_EQ(RequiredFree(path, policy), total);
  policy.min_free_bytes = 0;
  policy.min_free_percent = 0;
  EXPECT_EQ(RequiredFree(path, policy), 0u);
  EXPECT_TRUE(Fits(path, policy, 1 << 20));
}

}  // namespace
}  // namespace trainwatch::bundle
