#include "collect/flight_recorder.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "core/unique_fd.h"
#include "support/file_text.h"
#include "support/temp_dir.h"

namespace trainwatch::collect {
namespace {

using namespace std::string_literals;
using trainwatch::testing::TempDir;

std::optional<std::string> ReadDump(const FlightRecorderTarget& target) {
  std::string why;
  return ReadFlightRecorderDump(target, 1 << 20, why);
}

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
  EXPECT_EQ(target->root, root);
  EXPECT_EQ(target->pipe, "/x/p_3.pipe");
  EXPECT_EQ(target->dump, "/tmp/nccl_trace_rank_3");  // PyTorch's default
  EXPECT_EQ(target->owner, ::getuid());
  const auto fr = FindFlightRecorder(
      ::getpid(), 1,
      "TORCH_FR_DEBUG_INFO_PIPE_FILE=/a/\0TORCH_FR_BUFFER_SIZE=10\0TORCH_FR_DUMP_TEMP_FILE=/b/t_\0"s,
      "/proc", why);
  ASSERT_TRUE(fr.has_value());
  EXPECT_EQ(fr->dump, "/b/t_1");
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
  EXPECT_FALSE(ReadDump(*target).has_value());                 // the old one is no answer
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a later mtime
  dir.Write("trace_0", "the new dump");
  EXPECT_EQ(ReadDump(*target), "the new dump");
}

// The red team's attacks: a rank names where the daemon (root) writes its poke and what it
// reads back as the dump.
class FlightRecorderAttack : public ::testing::Test {
 protected:
  FlightRecorderAttack() {
    environ_ = "TORCH_NCCL_DEBUG_INFO_PIPE_FILE=" + dir_.PathOf("pipe_") + '\0' +
               "TORCH_NCCL_TRACE_BUFFER_SIZE=20" + '\0' +
               "TORCH_NCCL_DEBUG_INFO_TEMP_FILE=" + dir_.PathOf("trace_") + '\0';
    secret_ = dir_.Write("secret", "root's secret\n");
    ::chmod(secret_.c_str(), 0600);
  }
  FlightRecorderTarget Target() {
    std::string why;
    auto target = FindFlightRecorder(::getpid(), 0, environ_, "/proc", why);
    EXPECT_TRUE(target.has_value()) << why;
    return target.value_or(FlightRecorderTarget{});
  }
  std::string SecretNow() { return trainwatch::testing::ReadFile(secret_); }

  TempDir dir_;
  std::string environ_;
  std::string secret_;
};

TEST_F(FlightRecorderAttack, APipeThatLinksToAFileIsNeverWritten) {
  ASSERT_EQ(::symlink(secret_.c_str(), dir_.PathOf("pipe_0.pipe").c_str()), 0);
  std::string why;
  EXPECT_FALSE(PokeFlightRecorder(Target(), why));
  EXPECT_NE(why.find("symbolic link"), std::string::npos) << why;
  EXPECT_EQ(SecretNow(), "root's secret\n");
}

TEST_F(FlightRecorderAttack, APipeThatIsARegularFileIsNeverWritten) {
  dir_.Write("pipe_0.pipe", "keep me");
  std::string why;
  EXPECT_FALSE(PokeFlightRecorder(Target(), why));
  EXPECT_NE(why.find("is a regular file, not a FIFO"), std::string::npos) << why;
  EXPECT_EQ(trainwatch::testing::ReadFile(dir_.PathOf("pipe_0.pipe")), "keep me");
}

TEST_F(FlightRecorderAttack, APipeOrADumpOfAnotherUserIsRefused) {
  ASSERT_EQ(::mkfifo(dir_.PathOf("pipe_0.pipe").c_str(), 0600), 0);
  UniqueFd reader(::open(dir_.PathOf("pipe_0.pipe").c_str(), O_RDONLY | O_NONBLOCK));
  const FlightRecorderTarget target = Target();
  ASSERT_EQ(::chown(dir_.PathOf("pipe_0.pipe").c_str(), target.owner + 4242, -1), 0);
  std::string why;
  EXPECT_FALSE(PokeFlightRecorder(target, why));
  EXPECT_NE(why.find("owned by uid"), std::string::npos) << why;
  dir_.Write("trace_0", "someone else's");
  ASSERT_EQ(::chown(dir_.PathOf("trace_0").c_str(), target.owner + 4242, -1), 0);
  EXPECT_FALSE(ReadFlightRecorderDump(target, 1 << 20, why).has_value());
  EXPECT_NE(why.find("owned by uid"), std::string::npos) << why;
}

TEST_F(FlightRecorderAttack, ADumpSwappedForALinkAfterThePokeIsNotRead) {
  const FlightRecorderTarget target = Target();
  ASSERT_EQ(::symlink(secret_.c_str(), dir_.PathOf("trace_0").c_str()), 0);
  std::string why;
  EXPECT_FALSE(ReadFlightRecorderDump(target, 1 << 20, why).has_value());
  EXPECT_NE(why.find("symbolic link"), std::string::npos) << why;
}

TEST_F(FlightRecorderAttack, ADumpThatIsAFifoNeverBlocks) {
  const FlightRecorderTarget target = Target();
  ASSERT_EQ(::mkfifo(dir_.PathOf("trace_0").c_str(), 0600), 0);
  std::string why;
  EXPECT_FALSE(ReadFlightRecorderDump(target, 1 << 20, why).has_value());  // returns at once
  EXPECT_NE(why.find("is a FIFO, not a regular file"), std::string::npos) << why;
}

TEST_F(FlightRecorderAttack, ADumpOverTheCapIsRefusedWhole) {
  const FlightRecorderTarget target = Target();
  dir_.Write("trace_0", std::string(4096, 'x'));
  std::string why;
  EXPECT_FALSE(ReadFlightRecorderDump(target, 1024, why).has_value());
  EXPECT_NE(why.find("over the cap"), std::string::npos) << why;
  EXPECT_EQ(ReadFlightRecorderDump(target, 4096, why), std::string(4096, 'x')) << why;
}

TEST_F(FlightRecorderAttack, ARankInAnotherRootCannotLeadOutOfIt) {
  // A stand-in /proc whose process 42 has its own root, as a container's rank does. Its
  // variables lead through a link to "/" (its own root's, for the rank) to the host's FIFO and
  // the host's secret dump: resolved from the host's "/" they would be poked and read.
  TempDir proc;
  std::filesystem::create_directories(proc.path() / "42" / "root" / "x");
  ASSERT_EQ(::symlink("/", (proc.path() / "42/root/x/top").c_str()), 0);
  const std::string host_pipe = secret_ + "_p_0.pipe";
  ASSERT_EQ(::mkfifo(host_pipe.c_str(), 0600), 0);
  const UniqueFd reader(::open(host_pipe.c_str(), O_RDONLY | O_NONBLOCK));
  ASSERT_GE(reader.get(), 0);
  std::string why;
  const std::string environ = "TORCH_NCCL_DEBUG_INFO_PIPE_FILE=/x/top" + secret_ + "_p_" + '\0' +
                              "TORCH_NCCL_TRACE_BUFFER_SIZE=20" + '\0' +
                              "TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/x/top" + secret_ + "_" + '\0';
  const auto target = FindFlightRecorder(42, 0, environ, proc.path().string(), why);
  ASSERT_TRUE(target.has_value()) << why;
  EXPECT_FALSE(PokeFlightRecorder(*target, why)) << "the host's FIFO was written";
  char got[8] = {};
  EXPECT_LE(::read(reader.get(), got, sizeof got), 0) << "the host's FIFO was written";
  dir_.Write("secret_0", "root's secret dump\n");  // written after the poke, as a dump is
  EXPECT_FALSE(ReadFlightRecorderDump(*target, 1 << 20, why).has_value());
  EXPECT_EQ(why.find("root's secret"), std::string::npos) << why;
}

}  // namespace
}  // namespace trainwatch::collect
