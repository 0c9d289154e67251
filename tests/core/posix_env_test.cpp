// PosixEnv::ProcessExists on real processes: whether a writer still runs decides whether its
// log's end is judged (writer.exited), so an exited process must not pass for a live one.
#include "core/posix_env.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include <climits>
#include <csignal>

namespace trainwatch {
namespace {

class PosixEnvTest : public ::testing::Test {
 protected:
  PosixEnvTest() { uv_loop_init(&loop_); }
  ~PosixEnvTest() override { uv_loop_close(&loop_); }
  uv_loop_t loop_{};
  PosixEnv env_{&loop_};
};

TEST_F(PosixEnvTest, ItselfExistsAndAPidNoProcessHasDoesNot) {
  EXPECT_TRUE(env_.ProcessExists(::getpid()));
  EXPECT_FALSE(env_.ProcessExists(INT_MAX)) << "above any pid_max";
}

TEST_F(PosixEnvTest, AnExitedChildOfOursIsReapedAndGone) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::_exit(0);
  }
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {  // until it has exited, 5 s at most
    gone = !env_.ProcessExists(child);
    if (!gone) {
      ::usleep(10000);
    }
  }
  EXPECT_TRUE(gone);
  EXPECT_EQ(::waitpid(child, nullptr, WNOHANG), -1) << "ProcessExists reaped it";
}

// A grandchild whose parent (our child) never waits for it: a zombie we cannot reap, as a
// rank killed under a busy launcher is to the daemon.
TEST_F(PosixEnvTest, AnotherParentsZombieDoesNotExist) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const pid_t grandchild = ::fork();
    if (grandchild == 0) {
      ::_exit(0);
    }
    (void)::write(pipe_fds[1], &grandchild, sizeof grandchild);
    ::pause();  // never reaps it; killed by the test
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  pid_t grandchild = 0;
  ASSERT_EQ(::read(pipe_fds[0], &grandchild, sizeof grandchild),
            static_cast<ssize_t>(sizeof grandchild));
  ::close(pipe_fds[0]);
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = !env_.ProcessExists(grandchild);
    if (!gone) {
      ::usleep(10000);
    }
  }
  EXPECT_TRUE(gone) << "pid " << grandchild << " is a zombie, not a live process";
  EXPECT_TRUE(env_.ProcessExists(child)) << "its parent runs";
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace trainwatch
