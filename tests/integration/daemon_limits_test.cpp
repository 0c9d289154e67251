// The daemon under a low descriptor limit: started with a soft RLIMIT_NOFILE of 256 (a shell's
// `ulimit -n 256`, or the 1024 most systems give) and more files than that, it raises the
// soft limit to the hard one and watches every file.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <fstream>

#include "integration/daemon_fixture.h"

namespace trainwatch::testing {
namespace {

// Sets the soft RLIMIT_NOFILE of this process (and so of the daemon it starts) for a scope.
class SoftOpenFileLimit {
 public:
  explicit SoftOpenFileLimit(rlim_t soft) {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit lowered = saved_;
    lowered.rlim_cur = soft;
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

}  // namespace
}  // namespace trainwatch::testing
