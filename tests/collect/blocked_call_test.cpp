#include "collect/blocked_call.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "support/temp_dir.h"

namespace trainwatch::collect {
namespace {

using trainwatch::testing::TempDir;
namespace fs = std::filesystem;

// A /proc of our own holding one process with one thread: its stat, status, syscall, wchan,
// stack and mountinfo as the kernel writes them, and fd/7 a link to `file`.
class FakeBlockedProcess {
 public:
  FakeBlockedProcess(int pid, int tid, char state, const std::string& syscall,
                     const std::string& file) {
    const std::string task = std::to_string(pid) + "/task/" + std::to_string(tid);
    fs::create_directories(root_.PathOf(task));
    fs::create_directories(root_.PathOf(std::to_string(pid) + "/fd"));
    root_.Write(task + "/stat", std::to_string(tid) + " (pt_main_thread) " + state +
                                    " 1 1 1 0 -1 4194560 100 0 0 0 70 30 0 0 20 0 3 0 555 1000 "
                                    "100\n");
    root_.Write(task + "/status",
                "Name:\tpt_main_thread\nState:\tD (disk sleep)\nvoluntary_ctxt_switches:\t40\n"
                "nonvoluntary_ctxt_switches:\t2\n");
    root_.Write(task + "/syscall", syscall);
    root_.Write(task + "/wchan", "request_wait_answer");
    root_.Write(task + "/stack",
                "[<0>] request_wait_answer+0x12a/0x260 [fuse]\n"
                "[<0>] fuse_simple_request+0x1a4/0x2d0 [fuse]\n"
                "[<0>] fuse_do_readpage+0x113/0x1b0 [fuse]\n"
                "[<0>] filemap_read_folio+0x43/0xe0\n");
    root_.Write(std::to_string(pid) + "/mountinfo",
                "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
                "40 22 0:45 / /mnt/ckpt rw,nosuid,nodev,relatime shared:30 - fuse.sshfs "
                "user@host:/srv rw,user_id=0,group_id=0\n"
                "41 22 0:46 / /mnt/ckpt\\040old rw shared:31 - nfs4 srv:/old rw\n");
    fs::create_symlink(file, root_.PathOf(std::to_string(pid) + "/fd/7"));
  }
  std::string root() const { return root_.path().string(); }

 private:
  TempDir root_;
};

std::string ReadCall(long number, int fd) {
  return std::to_string(number) + " 0x" + std::to_string(fd) +
         " 0x7f12aa000000 0x100000 0x0 0x0 0x0 0x7ffc5d1e8e40 0x7f12b3e1c9cc\n";
}

TEST(BlockedCall, NamesTheCallItsFileTheFileSystemAndTheKernelStack) {
  FakeBlockedProcess process(4242, 4242, 'D', ReadCall(SYS_read, 7), "/mnt/ckpt/model.pt");
  const BlockedCall call = DescribeBlockedCall(4242, 4242, process.root());
  EXPECT_EQ(call.syscall, "read");
  EXPECT_EQ(call.file, "fd 7: /mnt/ckpt/model.pt");
  EXPECT_EQ(call.fs_type, "fuse.sshfs");
  EXPECT_EQ(call.mount_point, "/mnt/ckpt");
  EXPECT_EQ(call.wchan, "request_wait_answer");
  ASSERT_EQ(call.stack.size(), 4U);
  EXPECT_EQ(call.stack[0], "request_wait_answer [fuse]");
  EXPECT_EQ(call.stack[3], "filemap_read_folio");
  EXPECT_EQ(FormatBlockedCall(call),
            "read(fd 7: /mnt/ckpt/model.pt, on fuse.sshfs at /mnt/ckpt) in request_wait_answer; "
            "kernel stack: request_wait_answer [fuse] < fuse_simple_request [fuse] < "
            "fuse_do_readpage [fuse] < filemap_read_folio");
}

TEST(BlockedCall, AMountPointWithASpaceAndTheLongestMountWin) {
  FakeBlockedProcess process(10, 10, 'D', ReadCall(SYS_pread64, 7), "/mnt/ckpt old/x.pt");
  const BlockedCall call = DescribeBlockedCall(10, 10, process.root());
  EXPECT_EQ(call.syscall, "pread64");
  EXPECT_EQ(call.fs_type, "nfs4");
  EXPECT_EQ(call.mount_point, "/mnt/ckpt old");
  // "/mnt/ckptx" is not under "/mnt/ckpt".
  const auto mount = FindMountOf(
      "40 22 0:45 / /mnt/ckpt rw - fuse.sshfs h:/ rw\n"
      "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n",
      "/mnt/ckptx/y");
  ASSERT_TRUE(mount);
  EXPECT_EQ(mount->fs_type, "ext4");
  // The later of two mounts on one point hides the earlier.
  const auto over = FindMountOf(
      "40 22 0:45 / /data rw - nfs4 a:/ rw\n"
      "41 22 0:46 / /data rw - fuse.s3fs b rw\n",
      "/data/z");
  ASSERT_TRUE(over);
  EXPECT_EQ(over->fs_type, "fuse.s3fs");
  EXPECT_EQ(over->source, "b");
}

TEST(BlockedCall, WhatTheJobNamesIsPrintableAndCapped) {
  const std::string hostile = "/mnt/ckpt/\x1b]0;pwned\x07" + std::string(2000, 'a');
  FakeBlockedProcess process(11, 11, 'D', ReadCall(SYS_read, 7), hostile);
  const BlockedCall call = DescribeBlockedCall(11, 11, process.root());
  EXPECT_EQ(call.file.find('\x1b'), std::string::npos);
  EXPECT_NE(call.file.find("\\x1b"), std::string::npos);
  EXPECT_LT(call.file.size(), 700U);
  EXPECT_EQ(call.fs_type, "fuse.sshfs");
}

TEST(BlockedCall, APageFaultAnIoctlOnADeviceAndAnUnknownCall) {
  FakeBlockedProcess fault(12, 12, 'D', "-1 0x7ffc5d1e8e40 0x7f12b3e1c9cc\n", "/x");
  EXPECT_EQ(DescribeBlockedCall(12, 12, fault.root()).syscall, "no system call");
  FakeBlockedProcess ioctl(13, 13, 'D', ReadCall(SYS_ioctl, 7), "/dev/accel/accel0");
  const BlockedCall device = DescribeBlockedCall(13, 13, ioctl.root());
  EXPECT_EQ(device.file, "fd 7: /dev/accel/accel0");
  FakeBlockedProcess odd(14, 14, 'D', "4242 0x7 0x0\n", "/x");
  const BlockedCall unknown = DescribeBlockedCall(14, 14, odd.root());
  EXPECT_EQ(unknown.syscall, "syscall 4242");
  EXPECT_EQ(unknown.file, "");  // its first argument may be anything
}

TEST(BlockedCall, TheSyscallFileParses) {
  EXPECT_FALSE(ParseSyscallFile("running\n"));
  EXPECT_FALSE(ParseSyscallFile(""));
  EXPECT_FALSE(ParseSyscallFile("x 0x1"));
  EXPECT_FALSE(ParseSyscallFile("0 0xzz"));
  const auto read = ParseSyscallFile("0 0x1f 0x2 0x3 0x0 0x0 0x0 0x1 0x2\n");
  ASSERT_TRUE(read);
  EXPECT_EQ(read->number, 0);
  EXPECT_EQ(read->first_argument, 0x1fU);
  const auto none = ParseSyscallFile("-1 0x7ffc 0x7f12\n");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->number, -1);
}

TEST(BlockedCall, ThreadProgressOfThisProcessAndOfAThreadInD) {
  const std::vector<ThreadProgress> ours = ReadThreadProgress(::getpid());
  ASSERT_FALSE(ours.empty());
  EXPECT_EQ(ours.front().tid, ::getpid());  // the main thread first
  EXPECT_EQ(ours.front().state, 'R');       // reading its own /proc

  FakeBlockedProcess process(20, 21, 'D', ReadCall(SYS_read, 7), "/x");
  const std::vector<ThreadProgress> threads = ReadThreadProgress(20, process.root());
  ASSERT_EQ(threads.size(), 1U);
  EXPECT_EQ(threads[0].tid, 21);
  EXPECT_EQ(threads[0].state, 'D');
  EXPECT_EQ(threads[0].switches, 42U);
  EXPECT_TRUE(ReadThreadProgress(99999999, process.root()).empty());
}

}  // namespace
}  // namespace trainwatch::collect
