// StateDirGuard on a real directory (flock needs a real file): deleted under a running daemon,
// it is restored with the lock; if a second daemon took it meanwhile, the first is told.
#include "ops/state_dir_guard.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "support/temp_dir.h"

namespace trainwatch::ops {
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

// `docker run --user 1000:1000` with a fresh (root's) state volume: the reason names the
// directory's owner and mode and this process's ids, and what to do.
TEST(StateDirGuard, ADirectoryOfAnotherUserIsSaidWithItsOwnerAndMode) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root, to try it as another user";
  }
  testing::TempDir temp;
  const std::string dir = temp.PathOf("state");
  fs::create_directories(dir);
  // The child may reach it, not write it (a parent others may write is refused before that).
  fs::permissions(temp.path(), fs::perms::owner_all | fs::perms::group_read |
                                   fs::perms::group_exec | fs::perms::others_read |
                                   fs::perms::others_exec);
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    if (::setresgid(1000, 1000, 1000) != 0 || ::setresuid(1000, 1000, 1000) != 0) {
      ::_exit(3);
    }
    StateDirGuard guard(dir);
    const Result<bool> taken = guard.Acquire();
    const std::string why = taken ? "acquired" : taken.error().message;
    const bool written =
        ::write(pipe_fds[1], why.data(), why.size()) == static_cast<ssize_t>(why.size());
    ::_exit(written ? 0 : 4);
  }
  ::close(pipe_fds[1]);
  std::string why;
  char buffer[1024];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) {
    why.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_NE(why.find("Permission denied: the state_dir " + dir +
                     " is owned by uid 0, gid 0 with mode 0755, and this daemon runs as uid "
                     "1000, gid 1000; make it writable for that user (chown 1000:1000 " +
                     dir),
            std::string::npos)
      << why;
  EXPECT_EQ(why.find("another"), std::string::npos) << why;
}

}  // namespace
}  // namespace trainwatch::ops

namespace trainwatch::ops {
namespace {

// Security round 3: a root daemon refuses a state_dir (or its cache) that another user owns or
// may write: a planted compiled-rules database there once blinded detection.
TEST(StateDirGuard, AStateDirAnotherUserCouldWriteIsRefused) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root (chown)";
  }
  testing::TempDir temp;
  fs::permissions(temp.path(), fs::perms::owner_all | fs::perms::group_read |
                                   fs::perms::group_exec | fs::perms::others_read |
                                   fs::perms::others_exec);
  const std::string dir = temp.PathOf("state");
  fs::create_directories(dir);
  ASSERT_EQ(::chown(dir.c_str(), 4242, 4242), 0);
  Result<bool> taken = StateDirGuard(dir).Acquire();
  ASSERT_FALSE(taken.ok());
  EXPECT_NE(taken.error().message.find("owned by uid 4242"), std::string::npos)
      << taken.error().message;
  ASSERT_EQ(::chown(dir.c_str(), 0, 0), 0);
  fs::permissions(dir, fs::perms::all);
  taken = StateDirGuard(dir).Acquire();
  ASSERT_FALSE(taken.ok());
  EXPECT_NE(taken.error().message.find("writable by everyone"), std::string::npos)
      << taken.error().message;
  fs::permissions(dir, fs::perms::owner_all);
  fs::create_directories(dir + "/cache");
  ASSERT_EQ(::chown((dir + "/cache").c_str(), 4242, 4242), 0);
  taken = StateDirGuard(dir).Acquire();
  ASSERT_FALSE(taken.ok());
  EXPECT_NE(taken.error().message.find("cache: owned by uid 4242"), std::string::npos)
      << taken.error().message;
  ASSERT_EQ(::chown((dir + "/cache").c_str(), 0, 0), 0);
  taken = StateDirGuard(dir).Acquire();
  ASSERT_TRUE(taken.ok()) << taken.error().message;
  EXPECT_TRUE(*taken);
}

}  // namespace
}  // namespace trainwatch::ops
