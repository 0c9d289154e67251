// A worker wedged where no deadline reaches: the shared directory's file system hangs in the
// middle of reading a peer record (a FUSE file system standing in for an NFS server that
// stopped answering; the kernel holds the reading thread until a fatal signal). status says a
// worker is busy, and SIGTERM still ends the daemon within seconds, its state saved, where it
// used to wait for that worker for ever.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "integration/daemon_fixture.h"

namespace trainwatch::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class WedgedWorkerTest : public DaemonTest {
 protected:
  ~WedgedWorkerTest() override {
    if (mounted_) {
      // Lazily: the hung read may still hold it until its reader is gone.
      const std::string unmount = "umount -l '" + Dir("shared") + "' 2>/dev/null";
      static_cast<void>(std::system(unmount.c_str()));
    }
  }
  bool mounted_ = false;
};

TEST_F(WedgedWorkerTest, AStopDoesNotWaitForAWorkerWedgedOnAHungSharedDirectory) {
  if (::geteuid() != 0 || ::access("/dev/fuse", R_OK | W_OK) != 0 ||
      std::system("/usr/bin/python3 -c 'import fusepy' 2>/dev/null") != 0) {
    GTEST_SKIP() << "needs root, /dev/fuse and python3-fusepy (for a file system that hangs)";
  }
  fs::create_directories(Dir("shared"));
  const auto file_system = DaemonProcess::Program(
      {"/usr/bin/python3", TRAINWATCH_TEST_SOURCE_DIR "/integration/hung_fs.py", Dir("shared"),
       Dir("in-read")},
      Dir("fuse.log"));
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(Dir("shared/jobs/jobA")); }, 15s))
      << file_system->Log();
  mounted_ = true;
  WriteConfig({.capture = "capture: {enabled: false}\n"
                          "cluster: {node_name: node0, job_id: jobA, shared_dir: " +
                          Dir("shared") + ", poll_interval: 1s}\n"});
  StartDaemon();
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(Dir("in-read")); }, 15s)) << daemon_->Log();
  std::this_thread::sleep_for(1s);
  const Json status = daemon_->Status(state());
  EXPECT_GE(status["workers"]["busy"].get<int>(), 1) << status.dump(1);
  EXPECT_GE(status["workers"]["oldest_seconds"].get<int>(), 1) << status.dump(1);

  const auto stopped_at = std::chrono::steady_clock::now();
  daemon_->Signal(SIGTERM);
  const int code = daemon_->Wait(20s);
  const auto took = std::chrono::steady_clock::now() - stopped_at;
  EXPECT_EQ(code, 0) << daemon_->Log();
  EXPECT_LT(took, 10s) << daemon_->Log();
  EXPECT_NE(daemon_->Log().find("exiting without them"), std::string::npos) << daemon_->Log();
  EXPECT_TRUE(fs::exists(state() + "/offsets.json")) << "saved before leaving";
}

}  // namespace
}  // namespace trainwatch::testing
