// The CPython helper gdb may load, and the red team's attack it stops: a user's copy of python
// with a "-gdb.py" beside it (a venv made with --copies looks the same) must get Debian's own
// helper, never the planted one, which before ran as root.
#include "capture/gdb_python_helper.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "capture/gdb_command.h"
#include "support/file_text.h"
#include "support/run_binary.h"
#include "support/temp_dir.h"

namespace trainwatch::capture {
namespace {

using trainwatch::testing::TempDir;
namespace fs = std::filesystem;

constexpr const char* kPython = "/usr/bin/python3.11";
constexpr const char* kHelper = "/usr/share/gdb/auto-load/usr/bin/python3.11-gdb.py";

bool HaveDebianPython() { return ::access(kPython, X_OK) == 0 && ::access(kHelper, R_OK) == 0; }
bool HaveLibdw() { return BuildIdOf(kPython).ok() || BuildIdOf("/bin/true").ok(); }

TEST(GdbPythonHelper, TheHostsInterpreterGetsItsOwnHelper) {
  if (!HaveDebianPython()) {
    GTEST_SKIP() << "needs " << kPython << " and python3.11-dbg's " << kHelper;
  }
  std::string why;
  const std::optional<std::string> helper = TrustedPythonHelper(kPython, why);
  ASSERT_TRUE(helper.has_value()) << why;
  EXPECT_TRUE(helper->ends_with("-gdb.py")) << *helper;
  Result<std::string> id = BuildIdOf(kPython);
  ASSERT_TRUE(id) << id.error().message;
  EXPECT_EQ(id->size(), 40u);  // SHA-1, as Debian builds it
}

TEST(GdbPythonHelper, AnotherProgramGetsNone) {
  if (!HaveLibdw()) {
    GTEST_SKIP() << "needs libdw1";
  }
  std::string why;
  EXPECT_FALSE(TrustedPythonHelper("/bin/true", why).has_value());
  EXPECT_NE(why.find("none of this host's"), std::string::npos) << why;
  TempDir dir;
  ::mkfifo(dir.PathOf("fifo").c_str(), 0600);
  Result<std::string> fifo = BuildIdOf(dir.PathOf("fifo"));  // never blocks on a planted FIFO
  ASSERT_FALSE(fifo);
  EXPECT_NE(fifo.error().message.find("not a regular file"), std::string::npos);
  EXPECT_FALSE(TrustedPythonHelper(dir.PathOf("fifo"), why).has_value());
  EXPECT_NE(why.find("not a regular file"), std::string::npos) << why;
}

// A container's own build of python3.11 (another build id): this host's helper for the same
// version, but only when the image carries that build's debug information for py-bt.
TEST(GdbPythonHelper, AContainersOwnPythonBuildGetsTheHostsHelperWhenItsImageHasItsDebugInfo) {
  if (!HaveDebianPython() || !HaveLibdw()) {
    GTEST_SKIP() << "needs libdw1, " << kPython << " and python3.11-dbg's " << kHelper;
  }
  // A stand-in for the container's interpreter: an ELF with a build id no host python has.
  TempDir root;
  fs::create_directories(root.path() / "usr/bin");
  fs::copy_file("/bin/true", root.path() / "usr/bin/python3.11");
  const std::string exe = root.PathOf("usr/bin/python3.11");
  Result<std::string> id = BuildIdOf(exe);
  ASSERT_TRUE(id && !id->empty()) << "/bin/true has no build id";
  const ContainerInterpreter without{"python3.11", ""};  // the image has no debug information
  std::string why;
  EXPECT_FALSE(TrustedPythonHelper(exe, why, {}, &without).has_value());
  EXPECT_NE(why.find("has no debug information in its image: install python3.11-dbg in the "
                     "image"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find(*id), std::string::npos) << why;
  const ContainerInterpreter container{"python3.11", root.PathOf("debug-copy")};
  const std::optional<std::string> helper = TrustedPythonHelper(exe, why, {}, &container);
  ASSERT_TRUE(helper.has_value()) << why;
  EXPECT_EQ(*helper, kHelper) << "the host's helper, never one from the image";
  // Another version, for which this host has no helper: said so.
  const ContainerInterpreter newer{"python3.12", root.PathOf("debug-copy")};
  EXPECT_FALSE(TrustedPythonHelper(exe, why, {}, &newer).has_value());
  EXPECT_NE(why.find("with python3.12, for which this host has no CPython helper"),
            std::string::npos)
      << why;
  // Not in a container: no debug information of the image counts.
  EXPECT_FALSE(TrustedPythonHelper(exe, why).has_value());
}

TEST(GdbPythonHelper, AHelperAUserCanWriteIsRefused) {
  if (!HaveDebianPython() || ::geteuid() != 0) {  // else the stand-in tree is the user's
    GTEST_SKIP() << "needs root, " << kPython << " and python3.11-dbg's " << kHelper;
  }
  // A stand-in auto-load tree with the right helper name, but writable by everyone.
  TempDir dir;
  fs::create_directories(dir.path() / "auto/usr/bin");
  std::ofstream(dir.path() / "auto/usr/bin/python3.11-gdb.py") << "print('planted')\n";
  ::chmod((dir.path() / "auto/usr/bin").c_str(), 0777);
  std::string why;
  EXPECT_FALSE(TrustedPythonHelper(kPython, why, {dir.PathOf("auto"), "/usr/bin"}).has_value());
  EXPECT_NE(why.find("writable by everyone"), std::string::npos) << why;
}

// The attack end to end: the user's copy of python, a planted helper beside it, gdb run as
// the daemon runs it. The planted script must not run; py-bt still works (Debian's helper).
TEST(GdbPythonHelper, APlantedHelperBesideAUsersPythonNeverRuns) {
  if (!HaveDebianPython() || ::access("/usr/bin/gdb", X_OK) != 0 || ::geteuid() != 0) {
    GTEST_SKIP() << "needs root, gdb, " << kPython << " and python3.11-dbg";
  }
  TempDir dir;
  const fs::path home = dir.path() / "home";
  fs::create_directories(home);
  fs::copy_file(kPython, home / "python3.11");
  const std::string marker = dir.PathOf("ran-as-root");
  std::ofstream(home / "python3.11-gdb.py") << "open('" << marker << "', 'w').write('pwned')\n";
  std::ofstream(home / "python3.11-gdb.gdb") << "shell touch " << marker << "\n";
  ::chown(home.c_str(), 65534, 65534);
  for (const char* name : {"python3.11", "python3.11-gdb.py", "python3.11-gdb.gdb"}) {
    ::chown((home / name).c_str(), 65534, 65534);
  }
  ::chmod((home / "python3.11").c_str(), 0755);
  ::chmod(dir.path().c_str(), 0755);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t rank = ::fork();
  ASSERT_GE(rank, 0);
  if (rank == 0) {
    ::dup2(ready[1], STDOUT_FILENO);
    ::setgid(65534);
    ::setuid(65534);
    const std::string python = (home / "python3.11").string();
    ::execl(python.c_str(), python.c_str(), "-c",
            "import sys, time\ndef waiting_in_the_users_python():\n"
            " print('ready', flush=True)\n time.sleep(60)\n"
            "waiting_in_the_users_python()",
            nullptr);
    ::_exit(127);
  }
  ::close(ready[1]);
  char said[8] = {};
  ASSERT_GT(::read(ready[0], said, sizeof said), 0) << "the user's python did not start";
  ::close(ready[0]);
  std::string why;
  const std::optional<std::string> helper =
      TrustedPythonHelper("/proc/" + std::to_string(rank) + "/exe", why);
  ASSERT_TRUE(helper.has_value()) << why;
  EXPECT_EQ(helper->find(home.string()), std::string::npos) << *helper;
  GdbRequest request;
  request.pid = rank;
  request.python = true;
  request.python_helper = *helper;
  request.timeout = std::chrono::seconds(60);
  std::vector<std::string> argv = GdbCommand(request).argv;
  argv.front() = "/usr/bin/gdb";
  const trainwatch::testing::RunResult run = trainwatch::testing::RunBinary(argv);
  ::kill(rank, SIGKILL);
  ::waitpid(rank, nullptr, 0);
  EXPECT_FALSE(fs::exists(marker)) << "the planted helper ran as root";
  EXPECT_NE(run.out.find("waiting_in_the_users_python"), std::string::npos) << run.out << run.err;
}

}  // namespace
}  // namespace trainwatch::capture
