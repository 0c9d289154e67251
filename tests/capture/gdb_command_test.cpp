// gdb's command line in its two forms: attach at once, or read the symbols first and attach
// only when the go file appears (named through the environment, inside one Python command so
// that a gdb whose Python fails never attaches).
#include "capture/gdb_command.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace trainwatch::capture {
namespace {

std::string Joined(const config::CommandConfig& command) {
  std::string text;
  for (const std::string& arg : command.argv) {
    text += arg + "\n";
  }
  return text;
}

TEST(GdbCommand, AttachesAtOnceWithoutAGoFile) {
  GdbRequest request;
  request.pid = 42;
  request.python = true;
  request.python_helper = "/usr/share/gdb/auto-load/usr/bin/python3.11-gdb.py";
  request.as = "ranks/3/gdb.txt";
  const config::CommandConfig command = GdbCommand(request);
  const std::string text = Joined(command);
  EXPECT_NE(text.find("\n-p\n42\n"), std::string::npos) << text;
  EXPECT_NE(text.find("thread apply all py-bt"), std::string::npos);
  EXPECT_NE(text.find("\nsource /usr/share/gdb/auto-load/usr/bin/python3.11-gdb.py\n"),
            std::string::npos);
  EXPECT_EQ(text.find("thread apply all bt"), std::string::npos);
  EXPECT_EQ(text.find("index-cache"), std::string::npos);
  EXPECT_TRUE(command.env.empty());
  EXPECT_EQ(command.timeout, request.timeout);
  EXPECT_EQ(command.as, "ranks/3/gdb.txt");
}

TEST(GdbCommand, AContainersRankIsReadFromCopiesOfItsExecutableAndDebugInfoWithoutASysroot) {
  GdbRequest request;
  request.pid = 42;
  request.python = true;
  request.python_helper = "/usr/share/gdb/auto-load/usr/bin/python3.11-gdb.py";
  request.debug_dir = "/state/cache/gdb/container/debug-1-2-3-4.5";
  request.exe_copy = "/state/cache/gdb/exe/exe-1-2-3-4.5";
  std::string text = Joined(GdbCommand(request));
  // No sysroot through /proc/42/root (links there resolve on this host): gdb's own target:.
  EXPECT_EQ(text.find("sysroot"), std::string::npos) << text;
  EXPECT_NE(text.find("\nset debug-file-directory /state/cache/gdb/container/debug-1-2-3-4.5:"
                      "/usr/lib/debug\n"),
            std::string::npos)
      << text;
  // The copy, not the host's interpreter /proc/42/exe resolves to, and no reload of that one.
  EXPECT_NE(text.find("\nset exec-file-mismatch off\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n/state/cache/gdb/exe/exe-1-2-3-4.5\n-p\n42\n"), std::string::npos) << text;
  request.go_file = "/state/cache/gdb/go-1-abc/go";
  text = Joined(GdbCommand(request));
  EXPECT_NE(text.find("\n/state/cache/gdb/exe/exe-1-2-3-4.5\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("/proc/42/exe"), std::string::npos) << text;
}

TEST(GdbCommand, WithAGoFileReadsTheExecutableFirstAndAttachesInPython) {
  GdbRequest request;
  request.pid = 42;
  request.proc_root = "/fake/proc";
  request.native = true;
  request.index_dir = "/state/cache/gdb";
  request.go_file = "/state/cache/gdb/go-1-abc/go";
  const config::CommandConfig command = GdbCommand(request);
  const std::string text = Joined(command);
  EXPECT_EQ(text.find("\n-p\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n/fake/proc/42/exe\n"), std::string::npos) << text;
  EXPECT_NE(text.find("set index-cache directory /state/cache/gdb"), std::string::npos);
  // No py-bt asked: no types fetched, no py-bt; bt for the native stacks.
  EXPECT_EQ(text.find("lookup_type"), std::string::npos);
  EXPECT_EQ(text.find("py-bt"), std::string::npos);
  EXPECT_NE(text.find("thread apply all bt"), std::string::npos);
  // The attach is inside the Python command that waits, never a command of its own.
  EXPECT_NE(text.find("gdb.execute('attach 42' if os.path.exists(go) else 'quit 3')"),
            std::string::npos)
      << text;
  EXPECT_EQ(std::count(command.argv.begin(), command.argv.end(), "attach 42"), 0);
  EXPECT_EQ(command.argv.back(), "detach");
  EXPECT_EQ(command.env, (std::vector<std::string>{"TRAINWATCH_GDB_GO=" + request.go_file}));
  EXPECT_EQ(command.timeout, request.timeout + request.go_wait);
}

TEST(GdbCommand, LoadsNothingTheTracedProgramsOwnerCanWrite) {
  GdbRequest request;
  request.pid = 42;
  request.native = true;
  request.python_helper = "/usr/share/gdb/auto-load/usr/bin/python3.11-gdb.py";
  const std::string text = Joined(GdbCommand(request));
  EXPECT_NE(text.find("\n-nx\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nset auto-load off\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nset libthread-db-search-path $sdir\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("safe-path /\n"), std::string::npos) << text;
  // The helper is sourced only where py-bt is asked.
  EXPECT_EQ(text.find("source "), std::string::npos) << text;
  // The options come before anything is loaded: every -iex precedes the first -ex and the pid.
  const auto argv = GdbCommand(request).argv;
  const auto last_iex = std::find(argv.rbegin(), argv.rend(), "-iex");
  const auto first_p = std::find(argv.begin(), argv.end(), "-p");
  EXPECT_LT(std::distance(argv.begin(), last_iex.base()), std::distance(argv.begin(), first_p));
}

}  // namespace
}  // namespace trainwatch::capture
