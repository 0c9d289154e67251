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
#include <fstream>
#include <thread>

#include "integration/daemon_fixture.h"

namespace trainwatch::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class WedgedWorkerTest : public DaemonTest {
 protected:
  // Mounts hung_fs.py on Dir("shared"); false (with the test skipped) where it cannot.
  bool MountHungFileSystem() {
    if (::geteuid() != 0 || ::access("/dev/fuse", R_OK | W_OK) != 0 ||
        std::system("/usr/bin/python3 -c 'import fusepy' 2>/dev/null") != 0) {
      return false;
    }
    fs::create_directories(Dir("shared"));
    file_system_ = DaemonProcess::Program(
        {"/usr/bin/python3", TRAINWATCH_TEST_SOURCE_DIR "/integration/hung_fs.py", Dir("shared"),
         Dir("in-read")},
        Dir("fuse.log"));
    mounted_ = WaitUntil([&] { return fs::exists(Dir("shared/jobs/jobA")); }, 15s);
    EXPECT_TRUE(mounted_) << file_system_->Log();
    return mounted_;
  }
  std::unique_ptr<DaemonProcess> file_system_;
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
  if (!MountHungFileSystem()) {
    GTEST_SKIP() << "needs root, /dev/fuse and python3-fusepy (for a file system that hangs)";
  }
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

// Security round 3, item 4 with a hang instead of a FIFO: a rank names its Flight Recorder's
// dump on a file system that hangs. The capture gives up on that file after its deadline and
// writes the bundle; before, no later incident of any job got one.
TEST_F(WedgedWorkerTest, ARanksDumpOnAHungFileSystemDoesNotHoldTheCapture) {
  if (!MountHungFileSystem()) {
    GTEST_SKIP() << "needs root, /dev/fuse and python3-fusepy (for a file system that hangs)";
  }
  WriteConfig({.settle = "0s",
               .cooldown = "0s",
               .capture = "capture: {commands: [], habana_logs: none}\n"});
  StartDaemon();
  // A rank (RANK=0) with a Flight Recorder whose dump is on the hung file system; it writes
  // a crash line into a watched log and waits.
  // Its first line makes the daemon look up its writer; the crash line comes once it has.
  const std::string script =
      "import time\n"
      "print('step 1', flush=True)\n"
      "time.sleep(3)\n"
      "print('MARK 1 FIRE', flush=True)\n"
      "time.sleep(60)\n";
  std::vector<std::string> env = {"RANK=0", "TORCH_NCCL_DEBUG_INFO_PIPE_FILE=" + Dir("pipe_"),
                                  "TORCH_NCCL_TRACE_BUFFER_SIZE=20",
                                  "TORCH_NCCL_DEBUG_INFO_TEMP_FILE=" + Dir("shared/dump_")};
  for (const std::string& entry : env) {
    ::putenv(const_cast<char*>(entry.c_str()));
  }
  const auto rank =
      DaemonProcess::Program({"/usr/bin/python3", "-c", script}, Dir("logs/rank0.log"));
  for (const char* name : {"RANK", "TORCH_NCCL_DEBUG_INFO_PIPE_FILE",
                           "TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"}) {
    ::unsetenv(name);
  }
  EXPECT_TRUE(WaitUntil([&] { return SomeBundleWritten(); }, 60s)) << daemon_->Log();
  EXPECT_TRUE(fs::exists(Dir("in-read"))) << "the dump's file system was reached, and hung";
}

}  // namespace
}  // namespace trainwatch::testing
