// The daemon under a low descriptor limit: started with a soft RLIMIT_NOFILE of 256 (a shell's
// `ulimit -n 256`, or the 1024 most systems give) and more files than that, it raises the
// soft limit to the hard one and watches every file.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <optional>

#include "integration/daemon_fixture.h"

namespace trainwatch::testing {
namespace {

// Sets the soft (and, given, the hard) RLIMIT_NOFILE of this process, and so of the daemon it
// starts, for a scope. Raising the hard limit back needs root (CAP_SYS_RESOURCE).
class SoftOpenFileLimit {
 public:
  explicit SoftOpenFileLimit(rlim_t soft, std::optional<rlim_t> hard = std::nullopt) {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit lowered = saved_;
    lowered.rlim_cur = soft;
    lowered.rlim_max = hard.value_or(saved_.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &lowered);
  }
  ~SoftOpenFileLimit() { ::setrlimit(RLIMIT_NOFILE, &saved_); }
  SoftOpenFileLimit(const SoftOpenFileLimit&) = delete;
  SoftOpenFileLimit& operator=(const SoftOpenFileLimit&) = delete;

 private:
  rlimit saved_{};
};

TEST_F(DaemonTest, MoreFilesThanTheSoftDescriptorLimitAreAllWatched) {
  constexpr int kFiles = 600;
  rlimit now{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &now), 0);
  if (now.rlim_max < 2 * kFiles) {
    GTEST_SKIP() << "the hard descriptor limit (" << now.rlim_max << ") is too low to raise to";
  }
  WriteConfig({.settle = "0s", .cooldown = "0s", .paths = "logs/*.log"});
  char name[32];
  for (int n = 0; n < kFiles; ++n) {
    std::snprintf(name, sizeof name, "logs/rank%04d.log", n);
    std::ofstream(Dir(name)) << "step 1 loss 0.5\n";
  }
  {
    const SoftOpenFileLimit limit(256);
    StartDaemon();
  }
  ASSERT_EQ(daemon_->Status(state())["sources"][0]["files"].size(),
            static_cast<std::size_t>(kFiles))
      << daemon_->Log().substr(0, 4000);
  std::snprintf(name, sizeof name, "logs/rank%04d.log", kFiles - 1);
  std::ofstream(Dir(name), std::ios::app) << "MARK 1 FIRE\n";
  EXPECT_TRUE(WaitUntil([&] { return IncidentsOf("test.marker").size() == 1; }, 10s))
      << daemon_->Log().substr(0, 4000);
}

TEST_F(DaemonTest, AHardDescriptorLimitTooLowForTheFilesReadsTheRestInTurnAndSaysSo) {
  // 128 descriptors in all, hard: 48 for logs, the rest kept for the control socket, state
  // files, collectors and bundles. Before, the logs took them all and the daemon exited 2
  // (its control socket could not be made).
  constexpr int kFiles = 300;
  if (::geteuid() != 0) {
    GTEST_SKIP() << "lowers the hard descriptor limit, which only root can raise back";
  }
  WriteConfig({.settle = "0s",
               .cooldown = "0s",
               .paths = "logs/*.log",
               .capture = "capture: {commands: [], habana_logs: none}\n"});
  char name[32];
  for (int n = 0; n < kFiles; ++n) {
    std::snprintf(name, sizeof name, "logs/rank%04d.log", n);
    std::ofstream(Dir(name)) << "step 1 loss 0.5\n";
  }
  {
    const SoftOpenFileLimit limit(128, 128);
    StartDaemon();
  }
  const Json source = daemon_->Status(state())["sources"][0];
  EXPECT_EQ(source["files"].size(), 48u) << daemon_->Log().substr(0, 4000);
  ASSERT_TRUE(source.contains("unwatched")) << source.dump(1).substr(0, 4000);
  EXPECT_EQ(source["unwatched"]["count"], kFiles - 48);
  EXPECT_EQ(source["unwatched"]["files"].size(), 20u);
  EXPECT_NE(source["unwatched"]["files"][0]["why"].get<std::string>().find("48 log files are open"),
            std::string::npos)
      << source["unwatched"].dump(1);
  // Said once, as one line for all of them, not a line per file.
  const std::string log = daemon_->Log();
  EXPECT_NE(log.find("cannot watch 252 more files (252 in all)"), std::string::npos) << log;
  EXPECT_EQ(log.find("Too many open files"), std::string::npos) << log;
  // The watched ones fire, and the bundle gets the descriptors it needs.
  std::ofstream(Dir("logs/rank0000.log"), std::ios::app) << "MARK 1 FIRE\n";
  EXPECT_TRUE(WaitUntil([&] { return IncidentsOf("test.marker").size() == 1; }, 10s))
      << daemon_->Log().substr(0, 4000);
  // So do the others (security round 3, item 10): read in turn, 64 a second, a line in any of
  // the 252 is read within 4 s.
  const std::string unwatched = source["unwatched"]["files"][0]["path"].get<std::string>();
  std::ofstream(unwatched, std::ios::app) << "MARK 2 FIRE\n";
  EXPECT_TRUE(WaitUntil([&] { return IncidentsOf("test.marker").size() == 2; }, 15s))
      << unwatched << "\n"
      << daemon_->Log().substr(0, 4000);
  EXPECT_NE(source["unwatched"]["files"][0]["why"].get<std::string>().find("Read in turn"),
            std::string::npos);
  EXPECT_TRUE(WaitUntil([&] { return SomeBundleWritten(); }, 30s)) << daemon_->Log();
}

}  // namespace
}  // namespace trainwatch::testing
