#include "collect/flight_recorder.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "core/unique_fd.h"
#include "support/temp_dir.h"

namespace trainwatch::collect {
namespace {

using namespace std::string_literals;
using trainwatch::testing::TempDir;

TEST(FlightRecorder, IsFoundOnlyWhereTheEnvironmentEnablesIt) {
  std::string why;
  EXPECT_FALSE(FindFlightRecorder(::getpid(), 0, "PATH=/bin\0"s, "/proc", why).has_value());
  EXPECT_NE(why.find("not enabled"), std::string::npos) << why;
  // A pipe without a trace buffer dumps nothing.
  EXPECT_FALSE(
      FindFlightRecorder(::getpid(), 0, "TORCH_NCCL_DEBUG_INFO_PIPE_FILE=/x/p_\0"s, "/proc", why)
          .has_value());
  const auto target = FindFlightRecorder(
      ::getpid(), 3, "TORCH_NCCL_DEBUG_INFO_PIPE_FILE=/x/p_\0TORCH_NCCL_TRACE_BUFFER_SIZE=2000\0"s,
      "/proc", why);
  ASSERT_TRUE(target.has_value()) << why;
  const std::string root = "/proc/" + std::to_string(::getpid()) + "/root";
  EXPECT_EQ(target->pipe, root + "/x/p_3.pipe");
  EXPECT_EQ(target->dump, root + "/tmp/nccl_trace_rank_3");  // PyTorch's default
  const auto fr = FindFlightRecorder(
      ::getpid(), 1,
      "TORCH_FR_DEBUG_INFO_PIPE_FILE=/a/\0TORCH_FR_BUFFER_SIZE=10\0TORCH_FR_DUMP_TEMP_FILE=/b/t_\0"s,
      "/proc", why);
  ASSERT_TRUE(fr.has_value());
  EXPECT_EQ(fr->dump, root + "/b/t_1");
}

TEST(FlightRecorder, PokesItsPipeAndReadsOnlyANewDump) {
  TempDir dir;
  const std::string environ = "TORCH_NCCL_DEBUG_INFO_PIPE_FILE=" + dir.PathOf("pipe_") + '\0' +
                              "TORCH_NCCL_TRACE_BUFFER_SIZE=20" + '\0' +
                              "TORCH_NCCL_DEBUG_INFO_TEMP_FILE=" + dir.PathOf("trace_") + '\0';
  dir.Write("trace_0", "an old dump");
  std::string why;
  const auto target = FindFlightRecorder(::getpid(), 0, environ, "/proc", why);
  ASSERT_TRUE(target.has_value()) << why;
  ASSERT_EQ(::mkfifo(dir.PathOf("pipe_0.pipe").c_str(), 0600), 0);
  EXPECT_FALSE(PokeFlightRecorder(*target, why));  // nobody reads it: never blocks
  EXPECT_NE(why.find("nobody reads"), std::string::npos) << why;
  UniqueFd reader(::open(dir.PathOf("pipe_0.pipe").c_str(), O_RDONLY | O_NONBLOCK));
  ASSERT_GE(reader.get(), 0);
  ASSERT_TRUE(PokeFlightRecorder(*target, why)) << why;
  char got[8] = {};
  EXPECT_GT(::read(reader.get(), got, sizeof got), 0);
  EXPECT_FALSE(ReadFlightRecorderDump(*target).has_value());   // the old one is no answer
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a later mtime
  dir.Write("trace_0", "the new dump");
  EXPECT_EQ(ReadFlightRecorderDump(*target), "the new dump");
}

}  // namespace
}  // namespace trainwatch::collect
