// Hangs no log tells of: a rank stuck in the kernel on a file system whose server stopped
// answering (tests/integration/blocking_fs.py, a FUSE file system standing in for an NFS or
// sshfs server; the kernel holds the reader in uninterruptible sleep, never woken). The
// daemon's `processes` source looks at the job's processes every 2 s and its line, read by the
// shipped rules/blocked.yaml, makes a storage hang naming the rank, the call and the file;
// reads that wait a few seconds each (a slow but answering server) raise nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "integration/daemon_fixture.h"
#include "support/file_text.h"

namespace trainwatch::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class BlockedProcessTest : public DaemonTest {
 protected:
  // Mounts blocking_fs.py on Dir("mnt"), its reads held (checkpoint.pt) or delayed by
  // `delay_s` (shard.bin); false where it cannot (the test then skips).
  bool MountBlockingFileSystem(const std::string& delay_s) {
    if (::geteuid() != 0 || ::access("/dev/fuse", R_OK | W_OK) != 0 ||
        std::system("/usr/bin/python3 -c 'import fusepy' 2>/dev/null") != 0) {
      return false;
    }
    fs::create_directories(Dir("mnt"));
    fs::create_directories(Dir("control"));
    std::ofstream(Dir("control/hold")).flush();
    std::ofstream(Dir("control/delay")) << delay_s;
    file_system_ = DaemonProcess::Program(
        {"/usr/bin/python3", TRAINWATCH_TEST_SOURCE_DIR "/integration/blocking_fs.py", Dir("mnt"),
         Dir("control")},
        Dir("fuse.log"));
    mounted_ = WaitUntil([&] { return fs::exists(Dir("mnt/checkpoint.pt")); }, 15s);
    EXPECT_TRUE(mounted_) << file_system_->Log();
    return mounted_;
  }
  void Release() { fs::remove(Dir("control/hold")); }
  ~BlockedProcessTest() override {
    if (mounted_) {
      Release();
      const std::string unmount = "umount -l '" + Dir("mnt") + "' 2>/dev/null";
      static_cast<void>(std::system(unmount.c_str()));
    }
  }

  std::unique_ptr<DaemonProcess> file_system_;
  bool mounted_ = false;
};

TEST_F(BlockedProcessTest, ARankStuckReadingFromADeadFileSystemIsAStorageHang) {
  if (!MountBlockingFileSystem("3")) {
    GTEST_SKIP() << "needs root, /dev/fuse and python3-fusepy (for a file system that stalls)";
  }
  WriteConfig({.extra_sources = "  - name: processes\n"
                                "    tags: [processes]\n"
                                "    processes: true\n"
                                "    blocked_after: 6s\n"});
  StartDaemon();
  JobProcess rank(TRAINWATCH_TEST_SOURCE_DIR "/integration/jobs/reads_checkpoint.py",
                  {Dir("mnt"), "3"}, Dir("logs/rank3.log"));

  // The slow server: reads of 3 s each, for longer than blocked_after in all.
  ASSERT_TRUE(WaitUntil(
      [&] { return ReadFile(Dir("logs/rank3.log")).find("shard read") != std::string::npos; }, 60s))
      << ReadFile(Dir("logs/rank3.log")) << daemon_->Log();
  EXPECT_TRUE(ReadIncidents(state()).empty()) << ReadIncidents(state())[0].dump(1);

  // The dead one: told once the read has waited 6 s, never woken.
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(Dir("control/in_read_checkpoint.pt")); }, 20s));
  const auto stuck = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitUntil([&] { return !ReadIncidents(state()).empty(); }, 30s)) << daemon_->Log();
  const auto told = std::chrono::steady_clock::now() - stuck;
  std::cout << "[ measured ] the stuck read was an incident "
            << std::chrono::duration_cast<std::chrono::milliseconds>(told).count()
            << " ms after it began (blocked_after 6s, a look every 2 s)\n";
  const Json incident = ReadIncidents(state())[0];
  EXPECT_EQ(incident["kind"], "hang") << incident.dump(1);
  EXPECT_EQ(incident["cause"], "infrastructure");
  EXPECT_EQ(incident["action"], "retry");
  const Json& firing = incident["firings"][0];
  EXPECT_EQ(firing["rule"], "blocked.storage");
  EXPECT_EQ(firing["source"], "processes");
  EXPECT_EQ(firing["rank"], 3);
  const std::string text = firing["text"];
  EXPECT_NE(text.find("[rank3]: trainwatch: python3 (pid " + std::to_string(rank.pid()) +
                      ") has been blocked in the kernel for "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("read(fd "), std::string::npos) << text;
  EXPECT_NE(text.find(Dir("mnt") + "/checkpoint.pt, on fuse at " + Dir("mnt") + ")"),
            std::string::npos)
      << text;
  EXPECT_GT(told, 4s);
  EXPECT_LT(told, 15s);

  // While the rank is stuck, `trainwatch status` answers and says the watch is not blind.
  const auto asked = std::chrono::steady_clock::now();
  const Json status = daemon_->Status(state());
  std::cout << "[ measured ] trainwatch status answered in "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - asked)
                   .count()
            << " ms while the rank was stuck (the CLI's own start included)\n";
  EXPECT_EQ(status["health"]["watching"], true) << status["health"].dump(1);

  // The server answers: the rank goes on, and nothing more is told.
  Release();
  EXPECT_EQ(rank.Wait(20s), 0);
  EXPECT_NE(ReadFile(Dir("logs/rank3.log")).find("checkpoint read"), std::string::npos);
  EXPECT_EQ(ReadIncidents(state()).size(), 1U);
}

// A device tool that never answers (a wedged device) is an incident of its own: killed at its
// deadline in two captures in a row, it is told on the `processes` source as a device failure.
TEST_F(BlockedProcessTest, ADeviceToolThatTwiceDoesNotAnswerIsADeviceIncident) {
  fs::create_directories(Dir("bin"));
  std::ofstream(Dir("bin/hl-smi")) << "#!/bin/sh\nexec sleep 60\n";
  fs::permissions(Dir("bin/hl-smi"), fs::perms::owner_all);
  WriteConfig({.cooldown = "0s",
               .capture = "capture: {habana_logs: none, stacks: false, commands: [{name: "
                          "hl-smi-q, argv: [hl-smi, -q], as: device/hl-smi-q.txt, timeout: "
                          "1s}]}\n",
               .extra_sources = "  - name: processes\n"
                                "    tags: [processes]\n"
                                "    processes: true\n"});
  StartDaemon({"PATH=" + Dir("bin") + ":/usr/bin:/bin"});
  for (int mark = 1; mark <= 2; ++mark) {
    Append(Dir("logs/train.log"), "MARK " + std::to_string(mark) + " FIRE\n");
    ASSERT_TRUE(
        WaitUntil([&] { return BundleRecords().size() >= static_cast<std::size_t>(mark); }, 30s))
        << daemon_->Log();
  }
  ASSERT_TRUE(WaitUntil([&] { return ReadIncidents(state()).size() >= 3; }, 20s)) << daemon_->Log();
  const std::vector<Json> incidents = ReadIncidents(state());
  const Json& device = incidents[2];
  EXPECT_EQ(device["kind"], "device") << device.dump(1);
  EXPECT_EQ(device["cause"], "driver");
  // The rule says reboot; the retry policy may say more (this node's third failure in a row).
  EXPECT_EQ(device["firings"][0]["action"], "reboot_node");
  EXPECT_TRUE(device["action"] == "reboot_node" || device["action"] == "exclude_node")
      << device.dump(1);
  EXPECT_EQ(device["firings"][0]["rule"], "blocked.device_tool");
  EXPECT_EQ(device["firings"][0]["text"],
            "trainwatch: hl-smi (collector hl-smi-q) did not answer within its 1 s deadline, 2 "
            "captures in a row: the device management tool does not answer: the device or its "
            "driver may be wedged");
  // Told once: its own capture's timeout adds nothing.
  ASSERT_TRUE(WaitUntil([&] { return BundleRecords().size() >= 3; }, 30s)) << daemon_->Log();
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(ReadIncidents(state()).size(), 3U);
}

}  // namespace
}  // namespace trainwatch::testing
