#include "collect/wait_state.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "support/fake_proc.h"

namespace trainwatch::collect {
namespace {

TEST(WaitState, ReadsTheStateAndTheKernelFunctionItSleepsIn) {
  testing::FakeProc proc;
  proc.Add(42, 1, 100, {"python3"}, {}, "python3", 'S');
  std::ofstream(proc.root() + "/42/wchan") << "futex_do_wait";
  const std::optional<WaitState> state = ReadWaitState(42, proc.root());
  ASSERT_TRUE(state);
  EXPECT_EQ(state->state, 'S');
  EXPECT_EQ(state->wchan, "futex_do_wait");
  EXPECT_EQ(WaitKey(*state), "futex_do_wait");
  EXPECT_FALSE(ReadWaitState(43, proc.root())) << "no such process";
}

TEST(WaitState, KeysNameWhatTheSampleCountsAs) {
  EXPECT_EQ(WaitKey({'R', "0"}), "running");
  EXPECT_EQ(WaitKey({'S', "0"}), "asleep");
  EXPECT_EQ(WaitKey({'D', "nfs_wait_on_request"}), "disk sleep in nfs_wait_on_request");
  EXPECT_EQ(WaitKey({'t', ""}), "stopped");
}

TEST(WaitState, AHostileWchanIsCutToASymbol) {
  testing::FakeProc proc;
  proc.Add(42, 1, 100, {"python3"}, {}, "python3", 'S');
  std::ofstream(proc.root() + "/42/wchan") << "evil\x1b[31m name;rm -rf /";
  const std::optional<WaitState> state = ReadWaitState(42, proc.root());
  ASSERT_TRUE(state);
  EXPECT_EQ(state->wchan, "evil31mnamermrf");
}

TEST(WaitState, ThisProcessCanBeRead) {
  const std::optional<WaitState> state = ReadWaitState(::getpid());
  ASSERT_TRUE(state);
  EXPECT_EQ(WaitKey(*state), "running");
}

}  // namespace
}  // namespace trainwatch::collect
