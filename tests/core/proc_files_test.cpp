#include "core/proc_files.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "support/temp_dir.h"

namespace trainwatch {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;
using testing::TempDir;

// A directory laid out like /proc, with one file of process `pid`.
void FakeProcFile(const TempDir& proc, pid_t pid, const std::string& name,
                  const std::string& text) {
  fs::create_directories(proc.path() / std::to_string(pid));
  proc.Write(std::to_string(pid) + "/" + name, text);
}

TEST(ProcFiles, PathOfAProcessFile) {
  EXPECT_EQ(ProcPath("/proc", 42, "status"), "/proc/42/status");
  EXPECT_EQ(ProcPath("/tmp/fake", 7, "fd"), "/tmp/fake/7/fd");
}

TEST(ProcFiles, PidInItsNamespaceIsNSpidsLastField) {
  TempDir proc;
  const std::string root = proc.path().string();
  FakeProcFile(proc, 31245, "status", "Name:\tpython3\nTgid:\t31245\nNSpid:\t31245\t7\nPPid:\t1\n");
  FakeProcFile(proc, 500, "status", "Name:\tpython3\nNSpid:\t500\n");
  FakeProcFile(proc, 600, "status", "Name:\tpython3\n");  // an old kernel: no NSpid
  EXPECT_EQ(PidInItsNamespace(31245, root), 7) << "a container's pid 7";
  EXPECT_EQ(PidInItsNamespace(500, root), 500);
  EXPECT_EQ(PidInItsNamespace(600, root), 600);
  EXPECT_EQ(PidInItsNamespace(700, root), 700) << "gone: itself";
  EXPECT_EQ(PidInItsNamespace(::getpid()), ::getpid());
}

TEST(ProcFiles, AZombieIsToldByItsStatsStateAfterTheLastParenthesis) {
  TempDir proc;
  const std::string root = proc.path().string();
  FakeProcFile(proc, 10, "stat", "10 (python3) Z 1 10 10 0 -1 4227084 0 0 0 0 0 0 0 0 20 0 1 0 5");
  FakeProcFile(proc, 11, "stat", "11 (x) Z (y) S 1 11 11 0 -1 4227084 0 0 0 0 0 0 0 0 20 0 1 0");
  FakeProcFile(proc, 12, "stat", "12 (pt_main_thread) D 1 12 12 0 -1 4194560 0 0 0 0 0 0 0 0");
  FakeProcFile(proc, 13, "stat", "13 (exiting) X 1 13 13 0 -1 4194560 0 0 0 0 0 0 0 0 20 0");
  FakeProcFile(proc, 14, "stat", "14 (cut");
  EXPECT_TRUE(IsZombie(10, root));
  EXPECT_FALSE(IsZombie(11, root)) << "a comm that says ') Z ' is not the state";
  EXPECT_FALSE(IsZombie(12, root));
  EXPECT_TRUE(IsZombie(13, root)) << "X: being reaped";
  EXPECT_FALSE(IsZombie(14, root)) << "unreadable: not known to be a zombie";
  EXPECT_FALSE(IsZombie(15, root)) << "gone";
}

TEST(ProcFiles, AChildNotYetReapedIsAZombieAndThenGone) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::_exit(0);
  }
  bool zombie = false;
  for (int i = 0; i < 500 && !zombie; ++i) {  // until the child has exited, 5 s at most
    zombie = IsZombie(child);
    if (!zombie) {
      ::usleep(10000);
    }
  }
  EXPECT_TRUE(zombie);
  EXPECT_FALSE(IsZombie(::getpid()));
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  EXPECT_FALSE(IsZombie(child));
}

TEST(ProcFiles, CommLosesOnlyTheKernelsNewline) {
  TempDir proc;
  const std::string root = proc.path().string();
  FakeProcFile(proc, 10, "comm", "python3\n");
  FakeProcFile(proc, 11, "comm", "odd\n\n");  // prctl(PR_SET_NAME, "odd\n")
  FakeProcFile(proc, 12, "comm", "bare");
  FakeProcFile(proc, 13, "comm", "");
  struct Case {
    pid_t pid;
    std::string comm;
  };
  for (const Case& c : {Case{10, "python3"}, Case{11, "odd\n"}, Case{12, "bare"}, Case{13, ""}}) {
    Result<std::string> comm = ReadProcComm(c.pid, root);
    ASSERT_TRUE(comm.ok()) << c.pid << ": " << comm.error().message;
    EXPECT_EQ(*comm, c.comm) << c.pid;
  }
}

TEST(ProcFiles, AGoneProcessIsAnErrorNamingThePath) {
  TempDir proc;
  const std::string root = proc.path().string();
  Result<std::string> comm = ReadProcComm(99, root);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.error().message, root + "/99/comm: No such file or directory");
  Result<ProcText> cmdline = ReadProcCmdline(99, root);
  ASSERT_FALSE(cmdline.ok());
  EXPECT_EQ(cmdline.error().message, root + "/99/cmdline: No such file or directory");
  Result<ProcText> environ_text = ReadProcEnviron(99, root);
  ASSERT_FALSE(environ_text.ok());
  EXPECT_EQ(environ_text.error().message, root + "/99/environ: No such file or directory");
}

TEST(ProcFiles, CmdlineAndEnvironAreRawWithTheirNuls) {
  TempDir proc;
  const std::string root = proc.path().string();
  const std::string cmdline = "python3\0train.py\0--name\0a b\0"s;
  const std::string environ_text = "A=1\0MULTI=x\ny\0B=\0"s;
  FakeProcFile(proc, 10, "cmdline", cmdline);
  FakeProcFile(proc, 10, "environ", environ_text);

  Result<ProcText> args = ReadProcCmdline(10, root);
  ASSERT_TRUE(args.ok()) << args.error().message;
  EXPECT_EQ(args->text, cmdline);
  EXPECT_FALSE(args->truncated);
  Result<ProcText> env = ReadProcEnviron(10, root);
  ASSERT_TRUE(env.ok()) << env.error().message;
  EXPECT_EQ(env->text, environ_text);
  EXPECT_FALSE(env->truncated);
}

TEST(ProcFiles, AZombiesEmptyFilesAreNotErrors) {
  TempDir proc;
  const std::string root = proc.path().string();
  FakeProcFile(proc, 10, "cmdline", "");
  FakeProcFile(proc, 10, "environ", "");
  Result<ProcText> args = ReadProcCmdline(10, root);
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(args->text, "");
  Result<ProcText> env = ReadProcEnviron(10, root);
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->text, "");
}

TEST(ProcFiles, CapKeepsTheStartAndSaysSo) {
  TempDir proc;
  const std::string root = proc.path().string();
  // Longer than one 16 KiB read, so the cap falls inside a later read.
  const std::string environ_text = std::string(40000, 'e') + "\0"s;
  FakeProcFile(proc, 10, "environ", environ_text);
  FakeProcFile(proc, 10, "cmdline", "0123456789"s);

  Result<ProcText> cut = ReadProcEnviron(10, root, 20000);
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->text, environ_text.substr(0, 20000));
  EXPECT_TRUE(cut->truncated);

  Result<ProcText> exact = ReadProcCmdline(10, root, 10);  // exactly the cap: nothing dropped
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->text, "0123456789");
  EXPECT_FALSE(exact->truncated);

  Result<ProcText> short_cap = ReadProcCmdline(10, root, 4);
  ASSERT_TRUE(short_cap.ok());
  EXPECT_EQ(short_cap->text, "0123");
  EXPECT_TRUE(short_cap->truncated);
}

TEST(ProcFiles, AFileThatCannotBeReadIsAnError) {
  TempDir proc;
  const std::string root = proc.path().string();
  fs::create_directories(proc.path() / "10" / "environ");  // open works, read() fails: EISDIR
  Result<ProcText> dir = ReadProcEnviron(10, root);
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error().message, root + "/10/environ: Is a directory");
}

TEST(ProcFiles, AnotherUsersEnvironIsPermissionDenied) {
  if (::geteuid() == 0) {
    GTEST_SKIP() << "root reads any file";
  }
  TempDir proc;
  const std::string root = proc.path().string();
  FakeProcFile(proc, 11, "environ", "A=1\0"s);
  fs::permissions(proc.PathOf("11/environ"), fs::perms::none);
  Result<ProcText> denied = ReadProcEnviron(11, root);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().message, root + "/11/environ: Permission denied");
}

TEST(ProcFiles, AFifoDoesNotBlockTheReader) {
  TempDir dir;
  const std::string fifo = dir.PathOf("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Without O_NONBLOCK, open() would wait for a writer that never comes: the alarm's SIGALRM
  // then ends the test binary, a failure rather than a hang.
  ::alarm(10);
  Result<ProcText> text = ReadProcFile(fifo);
  ::alarm(0);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(text->text, "");
}

TEST(ProcFiles, ReadsThisProcessInTheRealProc) {
  char old_name[17] = {};
  ASSERT_EQ(::prctl(PR_GET_NAME, old_name), 0);
  ASSERT_EQ(::prctl(PR_SET_NAME, "tw-proc-files"), 0);
  Result<std::string> comm = ReadProcComm(::getpid());
  ::prctl(PR_SET_NAME, old_name);
  ASSERT_TRUE(comm.ok()) << comm.error().message;
  EXPECT_EQ(*comm, "tw-proc-files");

  Result<ProcText> cmdline = ReadProcCmdline(::getpid());
  ASSERT_TRUE(cmdline.ok()) << cmdline.error().message;
  ASSERT_FALSE(cmdline->text.empty());
  EXPECT_EQ(cmdline->text.back(), '\0');
  EXPECT_NE(cmdline->text.find("core_tests"), std::string::npos);
}

}  // namespace
}  // namespace trainwatch

namespace trainwatch {
namespace {

// A process whose root is another directory (a container's image, a chroot) is reached
// through its root; one in a private mount namespace over our own root is not a container.
TEST(ForeignRootOf, IsTheRootOfAProcessWithAnotherRootOnly) {
  EXPECT_EQ(ForeignRootOf(::getpid()), "");
  EXPECT_EQ(ForeignRootOf(999999999), "") << "a pid that is not there";
  TempDir image;
  std::string roots;
  for (const bool chrooted : {false, true}) {
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t child = ::fork();
    if (child == 0) {
      const bool ok =
          ::unshare(CLONE_NEWNS) == 0 && (!chrooted || ::chroot(image.path().c_str()) == 0);
      const char said = ok ? '1' : '0';
      (void)::write(ready[1], &said, 1);
      ::pause();
      ::_exit(0);
    }
    char said = '0';
    ASSERT_EQ(::read(ready[0], &said, 1), 1);
    ::close(ready[0]);
    ::close(ready[1]);
    const std::string root = ForeignRootOf(child);
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    if (said != '1') {
      GTEST_SKIP() << "cannot make a mount namespace or chroot here (needs CAP_SYS_ADMIN)";
    }
    EXPECT_EQ(root, chrooted ? "/proc/" + std::to_string(child) + "/root" : "")
        << (chrooted ? "a chroot" : "a private mount namespace over our root");
  }
}

}  // namespace
}  // namespace trainwatch
