#include "collect/system_facts.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "collect/collector_results.h"
#include "support/temp_dir.h"

namespace trainwatch::collect {
namespace {

namespace fs = std::filesystem;
using trainwatch::testing::FindArtifact;
using trainwatch::testing::SumOfSizes;
using trainwatch::testing::TempDir;

TEST(CollectSystemFactsTest, RealMachine) {
  CollectorResult result = CollectSystemFacts();
  EXPECT_EQ(result.name, "system");
  EXPECT_EQ(result.status, CollectorStatus::kOk) << result.detail;
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  const Artifact* hostname = FindArtifact(result, "system/hostname.txt");
  ASSERT_NE(hostname, nullptr);
  EXPECT_EQ(hostname->content, std::string(host) + "\n");
  for (const char* path :
       {"system/cpuinfo.txt", "system/meminfo.txt", "system/loadavg.txt", "system/uptime.txt",
        "system/kernel.txt", "system/cpu-governors.txt", "system/network.txt"}) {
    const Artifact* artifact = FindArtifact(result, path);
    ASSERT_NE(artifact, nullptr) << path;
    if (std::string(path) != "system/network.txt") {  // a bare sandbox may have no address
      EXPECT_FALSE(artifact->content.empty()) << path;
    }
  }
  EXPECT_EQ(FindArtifact(result, "system/kernel.txt")->content.rfind("Linux ", 0), 0u);
  EXPECT_NE(FindArtifact(result, "system/meminfo.txt")->content.find("MemTotal:"),
            std::string::npos);
  EXPECT_NE(FindArtifact(result, "system/uptime.txt")->content.find(" days, "), std::string::npos);
  EXPECT_EQ(result.bytes, SumOfSizes(result));
}

TEST(CollectSystemFactsTest, GovernorsOnePerCpuInNumericOrder) {
  TempDir sys;
  const std::string cpus = "devices/system/cpu/";
  for (const char* cpu : {"cpu0", "cpu1", "cpu2", "cpu10"}) {
    fs::create_directories(sys.path() / (cpus + cpu + "/cpufreq"));
  }
  fs::create_directories(sys.path() / (cpus + "cpufreq"));  // not a cpu
  fs::create_directories(sys.path() / (cpus + "cpuidle"));  // not a cpu
  sys.Write(cpus + "cpu0/cpufreq/scaling_governor", "performance\n");
  sys.Write(cpus + "cpu2/cpufreq/scaling_governor", "powersave\n");
  sys.Write(cpus + "cpu10/cpufreq/scaling_governor", "performance\n");
  TempDir empty_proc;
  CollectorResult result = CollectSystemFacts(empty_proc.path().string(), sys.path().string());
  const Artifact* governors = FindArtifact(result, "system/cpu-governors.txt");
  ASSERT_NE(governors, nullptr);
  EXPECT_EQ(governors->content,
            "cpu0: performance\ncpu1: none\ncpu2: powersave\ncpu10: performance\n");
  // No /proc files there: detail lines, and still ok (uname, hostname...).
  EXPECT_EQ(result.status, CollectorStatus::kOk);
  EXPECT_EQ(FindArtifact(result, "system/cpuinfo.txt"), nullptr);
  EXPECT_NE(result.detail.find("cpuinfo"), std::string::npos) << result.detail;

  CollectorResult no_sys = CollectSystemFacts("/proc", sys.PathOf("nope"));
  const Artifact* none = FindArtifact(no_sys, "system/cpu-governors.txt");
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(none->content.rfind("none", 0), 0u);
}

// ---- disk usage ----

TEST(CollectDiskUsageTest, DirectoriesAndMissingOnes) {
  TempDir dir;
  const std::string missing = dir.PathOf("gone");
  CollectorResult result = CollectDiskUsage({dir.path().string(), missing});
  EXPECT_EQ(result.name, "disk_usage");
  EXPECT_EQ(result.status, CollectorStatus::kOk);
  const Artifact* usage = FindArtifact(result, "system/disk-usage.txt");
  ASSERT_NE(usage, nullptr);
  EXPECT_NE(usage->content.find(dir.path().string() + ": total "), std::string::npos)
      << usage->content;
  EXPECT_NE(usage->content.find("inodes total="), std::string::npos);
  EXPECT_NE(usage->content.find(missing + ": No such file or directory"), std::string::npos);
  EXPECT_NE(result.detail.find(missing), std::string::npos);
  EXPECT_EQ(result.bytes, usage->content.size());

  EXPECT_EQ(CollectDiskUsage({missing}).status, CollectorStatus::kFailed);
  EXPECT_EQ(CollectDiskUsage({}).status, CollectorStatus::kSkipped);
}

}  // namespace
}  // namespace trainwatch::collect
