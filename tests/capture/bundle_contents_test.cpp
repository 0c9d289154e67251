#include "capture/bundle_contents.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace trainwatch::capture {
namespace {

// Two collectors: one with a small text, a large text and a large file range; one with a
// small file range.
struct Results {
  CollectorResults builtins;
  CollectorResults commands;
  Results() {
    collect::CollectorResult logs;
    logs.name = "logs";
    logs.status = collect::CollectorStatus::kTimedOut;
    logs.detail = "slow";
    collect::AddText(logs, "small.txt", "ok\n");
    collect::AddText(logs, "large.txt", std::string(kSmallArtifact + 1, 'x'));
    collect::AddRange(logs, "habana_logs/big.log", "/var/log/big.log", 0, 10 << 20);
    builtins.push_back(std::move(logs));
    collect::CollectorResult tail;
    tail.name = "tail";
    collect::AddRange(tail, "logs/tail.log", "/var/log/train.log", 100, 4096);
    commands.push_back(std::move(tail));
  }
};

std::vector<std::string> Paths(const std::vector<collect::Artifact>& artifacts) {
  std::vector<std::string> paths;
  paths.reserve(artifacts.size());
  for (const collect::Artifact& artifact : artifacts) {
    paths.push_back(artifact.path);
  }
  return paths;
}

TEST(BundleContents, AnEarlyBundleCopiesTheSmallPartsAndLeavesTheResultsWhole) {
  Results results;
  std::uint64_t bytes = 0;
  const std::vector<collect::Artifact> early =
      CopySmallArtifacts(results.builtins, results.commands, bytes);
  EXPECT_EQ(Paths(early), (std::vector<std::string>{"small.txt", "logs/tail.log"}));
  EXPECT_EQ(bytes, 3u + 4096u);
  EXPECT_EQ(results.builtins[0].artifacts.size(), 3u);
  EXPECT_EQ(results.commands[0].artifacts.size(), 1u);
  EXPECT_EQ(ArtifactBytes(results.builtins, results.commands),
            3u + kSmallArtifact + 1 + (10u << 20) + 4096u);
}

TEST(BundleContents, AReducedBundleTakesTheSmallTextsOnly) {
  Results results;
  EXPECT_EQ(Paths(TakeArtifacts(results.builtins, results.commands, /*reduced=*/true)),
            std::vector<std::string>{"small.txt"});
  EXPECT_TRUE(results.builtins[0].artifacts.empty());
  EXPECT_TRUE(results.commands[0].artifacts.empty());

  Results whole;
  EXPECT_EQ(
      Paths(TakeArtifacts(whole.builtins, whole.commands, /*reduced=*/false)),
      (std::vector<std::string>{"small.txt", "large.txt", "habana_logs/big.log", "logs/tail.log"}));
}

TEST(BundleContents, StatusesKeepEverythingButTheArtifacts) {
  Results results;
  const CollectorResults statuses = StatusesOf(results.builtins, results.commands);
  ASSERT_EQ(statuses.size(), 2u);
  EXPECT_EQ(statuses[0].name, "logs");
  EXPECT_EQ(statuses[0].status, collect::CollectorStatus::kTimedOut);
  EXPECT_EQ(statuses[0].detail, "slow");
  EXPECT_EQ(statuses[1].name, "tail");
  EXPECT_TRUE(statuses[0].artifacts.empty());
  EXPECT_EQ(results.builtins[0].artifacts.size(), 3u);
}

}  // namespace
}  // namespace trainwatch::capture
