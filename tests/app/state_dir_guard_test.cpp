// StateDirGuard on a real directory (flock needs a real file): deleted under a running daemon,
// it is restored with the lock; if a second daemon took it meanwhile, the first is told.
#include "app/state_dir_guard.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "support/temp_dir.h"

namespace trainwatch::app {
namespace {

namespace fs = std::filesystem;

TEST(StateDirGuard, OneHolderAtATime) {
  testing::TempDir temp;
  StateDirGuard first(temp.PathOf("state/nested"));
  ASSERT_TRUE(*first.Acquire());  // the directory is made too
  StateDirGuard second(temp.PathOf("state/nested"));
  EXPECT_FALSE(*second.Acquire());
  std::string why;
  EXPECT_EQ(first.Check(&why), StateDirGuard::Verdict::kIntact);
}

// The red team's case: `rm -rf state_dir` under the daemon, and a second daemon that could
// start on the same config and fire every line twice.
TEST(StateDirGuard, ADeletedDirectoryIsRestoredWithTheLockStillOurs) {
  testing::TempDir temp;
  StateDirGuard first(temp.PathOf("state"));
  ASSERT_TRUE(*first.Acquire());
  fs::remove_all(temp.PathOf("state"));
  std::string why;
  EXPECT_EQ(first.Check(&why), StateDirGuard::Verdict::kRestored);
  EXPECT_TRUE(fs::exists(temp.PathOf("state/lock")));
  StateDirGuard second(temp.PathOf("state"));
  EXPECT_FALSE(*second.Acquire());  // a second daemon is refused again
  EXPECT_EQ(first.Check(&why), StateDirGuard::Verdict::kIntact);
}

TEST(StateDirGuard, ADeletedLockFileAloneIsNoticedToo) {
  testing::TempDir temp;
  StateDirGuard first(temp.PathOf("state"));
  ASSERT_TRUE(*first.Acquire());
  fs::remove(temp.PathOf("state/lock"));
  std::string why;
  EXPECT_EQ(first.Check(&why), StateDirGuard::Verdict::kRestored);
  EXPECT_FALSE(*StateDirGuard(temp.PathOf("state")).Acquire());
}

TEST(StateDirGuard, WhenAnotherTookTheNewLockTheFirstIsToldSo) {
  testing::TempDir temp;
  StateDirGuard first(temp.PathOf("state"));
  ASSERT_TRUE(*first.Acquire());
  fs::remove_all(temp.PathOf("state"));
  StateDirGuard second(temp.PathOf("state"));
  ASSERT_TRUE(*second.Acquire());  // it started before the first noticed
  std::string why;
  EXPECT_EQ(first.Check(&why), StateDirGuard::Verdict::kTakenByAnother);
  EXPECT_NE(why.find("lock"), std::string::npos) << why;
}

TEST(StateDirGuard, ADirectoryThatCannotBeMadeIsSaid) {
  testing::TempDir temp;
  temp.Write("file", "x");
  StateDirGuard guard(temp.PathOf("file/state"));
  EXPECT_FALSE(guard.Acquire().ok());
  std::string why;
  EXPECT_EQ(guard.Check(&why), StateDirGuard::Verdict::kCannotRestore);
  EXPECT_FALSE(why.empty());
}

}  // namespace
}  // namespace trainwatch::app
