// gdb's command line in its two forms: attach at once, or read the symbols first and attach
// only when the go file appears (named through the environment, inside one Python command so
// that a gdb whose Python fails never attaches).
#include "capture/gdb_command.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "capture/gdb_preload.h"

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
  // The libraries are read before the wait (from the fake /proc), the ones left out after the
  // attach, and the hold is timed from the attach to the detach.
  const std::size_t preload = text.find("trainwatch_added = trainwatch_preload(42, ");
  const std::size_t wait =
      text.find("trainwatch_attach_at = time.monotonic(); gdb.execute('attach");
  const std::size_t attached = text.find("\npython trainwatch_attached(trainwatch_added)\n");
  const std::size_t detach = text.find("\ndetach\n");
  EXPECT_LT(preload, wait) << text;
  EXPECT_LT(wait, attached) << text;
  EXPECT_LT(attached, detach) << text;
  EXPECT_NE(text.find("trainwatch_preload(42, os.environ['TRAINWATCH_GDB_PROC'], False)"),
            std::string::npos)
      << text;
  EXPECT_EQ(command.argv.back(), "python trainwatch_held()");
  ASSERT_EQ(command.env.size(), 3U);
  EXPECT_EQ(command.env[0], "TRAINWATCH_GDB_PRELOAD=" + std::string(GdbPreloadPython()));
  EXPECT_EQ(command.env[1], "TRAINWATCH_GDB_PROC=/fake/proc");
  EXPECT_EQ(command.env[2], "TRAINWATCH_GDB_GO=" + request.go_file);
  EXPECT_EQ(command.timeout, request.timeout + request.go_wait);
}

}  // namespace
}  // namespace trainwatch::capture
