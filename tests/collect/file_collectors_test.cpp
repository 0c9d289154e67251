#include "collect/file_collectors.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "collect/bundle_names.h"
#include "collect/collector_results.h"
#include "support/temp_dir.h"

namespace trainwatch::collect {
namespace {

namespace fs = std::filesystem;
using trainwatch::testing::FindArtifact;
using trainwatch::testing::Paths;
using trainwatch::testing::SumOfSizes;
using trainwatch::testing::TempDir;

void SetAge(const std::string& path, std::chrono::hours age) {
  fs::last_write_time(path, fs::file_time_type::clock::now() - age);
}

// ---- log tails ----

TEST(CollectLogTailsTest, TailsStartAtALine) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 100; ++i) {
    text += "step " + std::to_string(i) + " loss " + std::string(i % 7, 'x') + "\n";
  }
  fs::create_directories(dir.path() / "run1");
  const std::string big = dir.Write("run1/rank0.log", text);
  const std::string small = dir.Write("small.log", "one\ntwo\n");
  const std::string missing = dir.PathOf("missing.log");
  const std::uint64_t tail = 301;

  CollectorResult result = CollectLogTails({big, small, missing}, tail);
  EXPECT_EQ(result.name, "log_tails");
  EXPECT_EQ(result.status, CollectorStatus::kOk);
  EXPECT_TRUE(result.truncated);
  ASSERT_EQ(result.artifacts.size(), 2u);
  EXPECT_NE(result.detail.find(missing), std::string::npos);

  const Artifact& a = result.artifacts[0];
  EXPECT_EQ(a.path, "logs/" + SafeBundleName(big));
  EXPECT_EQ(a.path.find('/', 5), std::string::npos);
  EXPECT_EQ(a.source_file, fs::canonical(big).string());
  EXPECT_TRUE(a.content.empty());
  EXPECT_GE(a.offset, text.size() - tail);
  EXPECT_LT(a.offset, text.size() - tail + 20);  // within a line of the cut
  EXPECT_EQ(text[a.offset - 1], '\n');
  EXPECT_EQ(a.offset + a.length, text.size());

  const Artifact& b = result.artifacts[1];
  EXPECT_EQ(b.offset, 0u);
  EXPECT_EQ(b.length, 8u);
  EXPECT_EQ(result.bytes, a.length + b.length);
}

TEST(CollectLogTailsTest, CutOnALineStartStaysAndNamesStayUnique) {
  TempDir dir;
  fs::create_directories(dir.path() / "a");
  const std::string one = dir.Write("a/b.log", "0123456789\nabcdefghi\n");  // 21 bytes
  const std::string two = dir.Write("a_b.log", "x\n");
  CollectorResult result = CollectLogTails({one, two}, 10);
  ASSERT_EQ(result.artifacts.size(), 2u);
  EXPECT_EQ(result.artifacts[0].offset, 11u);  // "abcdefghi\n" is exactly the last 10 bytes
  EXPECT_EQ(result.artifacts[0].length, 10u);
  EXPECT_NE(result.artifacts[0].path, result.artifacts[1].path);
  EXPECT_EQ(result.artifacts[1].path.substr(result.artifacts[1].path.size() - 6), "-2.log");
}

TEST(CollectLogTailsTest, ALineLongerThanTheWindowIsCut) {
  TempDir dir;
  const std::string text = std::string(200000, 'y') + "\nend\n";
  const std::string file = dir.Write("long.log", text);
  CollectorResult result = CollectLogTails({file}, 100000);  // the window sees no newline
  ASSERT_EQ(result.artifacts.size(), 1u);
  EXPECT_EQ(result.artifacts[0].offset, text.size() - 100000);
  EXPECT_EQ(result.artifacts[0].length, 100000u);

  CollectorResult near = CollectLogTails({file}, 100);  // the newline is within reach
  ASSERT_EQ(near.artifacts.size(), 1u);
  EXPECT_EQ(near.artifacts[0].offset, text.size() - 4);
  EXPECT_EQ(near.artifacts[0].length, 4u);
}

TEST(CollectLogTailsTest, TheLastLineIsCutRatherThanLeftEmpty) {
  TempDir dir;
  const std::string text = std::string(1000, 'z') + "\n";
  const std::string file = dir.Write("one-line.log", text);
  CollectorResult result = CollectLogTails({file}, 100);
  ASSERT_EQ(result.artifacts.size(), 1u);
  EXPECT_EQ(result.artifacts[0].offset, text.size() - 100);
  EXPECT_EQ(result.artifacts[0].length, 100u);
}

TEST(CollectLogTailsTest, NothingReadable) {
  TempDir dir;
  EXPECT_EQ(CollectLogTails({dir.PathOf("nope")}, 10).status, CollectorStatus::kFailed);
  CollectorResult not_file = CollectLogTails({dir.path().string()}, 10);
  EXPECT_EQ(not_file.status, CollectorStatus::kFailed);
  EXPECT_NE(not_file.detail.find("not a regular file"), std::string::npos);
  EXPECT_EQ(CollectLogTails({}, 10).status, CollectorStatus::kSkipped);
}

// ---- directory copy ----

TEST(CollectDirectoryTest, NewestFirstUpToTheCap) {
  TempDir dir;
  fs::create_directories(dir.path() / "logs" / "sub");
  const std::string newest = dir.Write("logs/sub/newest.log", std::string(100, 'n'));
  const std::string middle = dir.Write("logs/middle.log", "line one\nline two\nline three\n");
  const std::string old = dir.Write("logs/old.log", std::string(10, 'o'));
  SetAge(newest, std::chrono::hours(1));
  SetAge(middle, std::chrono::hours(2));
  SetAge(old, std::chrono::hours(3));
  const std::string root = dir.PathOf("logs");

  CollectorResult all = CollectDirectory("habana_logs", root, "habana_logs", 1 << 20);
  EXPECT_EQ(all.name, "habana_logs");
  EXPECT_EQ(all.status, CollectorStatus::kOk) << all.detail;
  EXPECT_FALSE(all.truncated);
  EXPECT_EQ(Paths(all),
            (std::vector<std::string>{"habana_logs/sub/newest.log", "habana_logs/middle.log",
                                      "habana_logs/old.log"}));
  EXPECT_EQ(all.artifacts[0].source_file, root + "/sub/newest.log");
  EXPECT_EQ(all.bytes, 100u + 29u + 10u);

  // 100 + 15: the middle file crosses; its last whole line ("line three\n") fits, old is out.
  CollectorResult capped = CollectDirectory("habana_logs", root, "habana_logs", 115);
  EXPECT_EQ(capped.status, CollectorStatus::kOk);
  EXPECT_TRUE(capped.truncated);
  ASSERT_EQ(capped.artifacts.size(), 2u) << ::testing::PrintToString(Paths(capped));
  EXPECT_EQ(capped.artifacts[0].path, "habana_logs/sub/newest.log");
  EXPECT_EQ(capped.artifacts[1].path, "habana_logs/middle.log");
  EXPECT_EQ(capped.artifacts[1].offset, 18u);
  EXPECT_EQ(capped.artifacts[1].length, 11u);
  EXPECT_LE(capped.bytes, 115u);
  EXPECT_NE(capped.detail.find("left out 1 older file"), std::string::npos) << capped.detail;

  // A cap the newest file alone exceeds: its tail (no newline: cut where the cap says).
  CollectorResult tiny = CollectDirectory("habana_logs", root, "habana_logs", 40);
  ASSERT_EQ(tiny.artifacts.size(), 1u);
  EXPECT_EQ(tiny.artifacts[0].offset, 60u);
  EXPECT_EQ(tiny.artifacts[0].length, 40u);
  EXPECT_TRUE(tiny.truncated);
}

TEST(CollectDirectoryTest, NeverFollowsSymlinks) {
  TempDir dir;
  fs::create_directories(dir.path() / "logs");
  fs::create_directories(dir.path() / "outside");
  dir.Write("outside/secret.txt", "not for the bundle");
  dir.Write("logs/real.log", "ok\n");
  fs::create_directory_symlink("/etc", dir.path() / "logs" / "etc_link");
  fs::create_symlink("/etc/hostname", dir.path() / "logs" / "hostname_link");
  fs::create_directory_symlink(dir.path() / "outside", dir.path() / "logs" / "sub_link");

  CollectorResult result = CollectDirectory("habana_logs", dir.PathOf("logs"), "hl", 1 << 20);
  EXPECT_EQ(result.status, CollectorStatus::kOk);
  EXPECT_EQ(Paths(result), std::vector<std::string>{"hl/real.log"});
  for (const char* link : {"etc_link", "hostname_link", "sub_link"}) {
    EXPECT_NE(result.detail.find("skipped symlink (not followed): " + std::string(link)),
              std::string::npos)
        << result.detail;
  }
}

TEST(CollectDirectoryTest, TheNamedDirectoryMayBeALink) {
  TempDir dir;
  fs::create_directories(dir.path() / "real");
  dir.Write("real/a.log", "a\n");
  fs::create_directory_symlink(dir.path() / "real", dir.path() / "link");
  CollectorResult result = CollectDirectory("habana_logs", dir.PathOf("link"), "hl", 100);
  EXPECT_EQ(Paths(result), std::vector<std::string>{"hl/a.log"});
}

TEST(CollectDirectoryTest, MissingAndEmpty) {
  TempDir dir;
  CollectorResult missing = CollectDirectory("habana_logs", dir.PathOf("nope"), "hl", 100);
  EXPECT_EQ(missing.status, CollectorStatus::kMissing);
  EXPECT_NE(missing.detail.find(dir.PathOf("nope")), std::string::npos);
  CollectorResult empty = CollectDirectory("habana_logs", dir.path().string(), "hl", 100);
  EXPECT_EQ(empty.status, CollectorStatus::kOk);
  EXPECT_TRUE(empty.artifacts.empty());
  const std::string file = dir.Write("file", "x");
  EXPECT_EQ(CollectDirectory("habana_logs", file, "hl", 100).status, CollectorStatus::kFailed);
}

// ---- extra paths ----

TEST(CollectPathsTest, FilesCopiedDirectoriesListed) {
  TempDir dir;
  const std::string config = dir.Write("train.yaml", "lr: 0.1\nbatch: 32\n");
  fs::create_directories(dir.path() / "ckpt" / "step100" / "shards");
  dir.Write("ckpt/latest", "step100");
  dir.Write("ckpt/step100/model.pt", std::string(5000, 'm'));
  dir.Write("ckpt/step100/shards/deep.bin", "too deep to list");
  fs::create_directory_symlink("/etc", dir.path() / "ckpt" / "etc_link");
  const std::string missing = dir.PathOf("missing");

  CollectorResult result = CollectPaths({config, dir.PathOf("ckpt"), missing}, 10);
  EXPECT_EQ(result.name, "extra_paths");
  EXPECT_EQ(result.status, CollectorStatus::kOk);
  EXPECT_TRUE(result.truncated);
  EXPECT_NE(result.detail.find(missing), std::string::npos);
  ASSERT_EQ(result.artifacts.size(), 2u);

  const Artifact& file = result.artifacts[0];
  EXPECT_EQ(file.path, "extra/" + SafeBundleName(config));
  EXPECT_EQ(file.source_file, fs::canonical(config).string());
  EXPECT_EQ(file.offset, 0u);
  EXPECT_EQ(file.length, 10u);

  const Artifact& listing = result.artifacts[1];
  EXPECT_EQ(listing.path, "extra/" + SafeBundleName(dir.PathOf("ckpt")) + ".listing.txt");
  const std::string& text = listing.content;
  EXPECT_NE(text.find(" latest\n"), std::string::npos) << text;
  EXPECT_NE(text.find("d "), std::string::npos);
  EXPECT_NE(text.find(" step100/\n"), std::string::npos);
  EXPECT_NE(text.find("5000 "), std::string::npos);
  EXPECT_NE(text.find(" step100/model.pt\n"), std::string::npos);
  EXPECT_NE(text.find(" step100/shards/\n"), std::string::npos);
  EXPECT_EQ(text.find("deep.bin"), std::string::npos) << "two levels only";
  EXPECT_NE(text.find("etc_link -> /etc\n"), std::string::npos);
  EXPECT_EQ(text.find("passwd"), std::string::npos) << "links are not followed";
  EXPECT_EQ(result.bytes, 10u + text.size());

  EXPECT_EQ(CollectPaths({missing}, 10).status, CollectorStatus::kFailed);
  EXPECT_EQ(CollectPaths({}, 10).status, CollectorStatus::kSkipped);
}

}  // namespace
}  // namespace trainwatch::collect
