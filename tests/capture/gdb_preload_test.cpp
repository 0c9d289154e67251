// The Python gdb runs to read a rank's libraries before it attaches (gdb_preload.h), run by the
// real interpreter against real processes, with a stand-in for gdb's module that records the
// commands it is given: which libraries are added and where, that a rank in another mount
// namespace gets none, which libraries are read after the attach, and the hold's line.
#include "capture/gdb_preload.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "support/run_binary.h"
#include "support/temp_dir.h"

namespace trainwatch::capture {
namespace {

using testing::RunBinary;
using testing::TempDir;

// A stand-in `gdb` module, then the scenario named by argv[2] on pid argv[3]; prints JSON.
constexpr const char* kHarness = R"PY(
import json, os, sys, time, types
commands = []
listed = ""
class GdbError(Exception):
    pass
def execute(command, to_string=False):
    commands.append(command)
    if command == "info sharedlibrary":
        return listed
    if command.startswith("add-symbol-file /nonexistent"):
        raise GdbError("No such file")
    return ""
sys.modules["gdb"] = types.SimpleNamespace(execute=execute, error=GdbError)
exec(open(sys.argv[1]).read())
scenario, pid = sys.argv[2], int(sys.argv[3])
out = {}
if scenario == "preload":
    added = trainwatch_preload(pid, "/proc", True)
    out["added"] = len(added)
    if pid:
        libc = [l.split() for l in open(f"/proc/{pid}/maps") if l.rstrip().endswith("/libc.so.6")]
        first = min((row for row in libc if row[2] == "00000000"), key=lambda row: row[0])
        out["libc"] = "add-symbol-file %s -o %#x" % (first[5], int(first[0].split("-")[0], 16))
elif scenario == "attached":
    libc = os.stat("/usr/bin/env")  # a file with two names (merged /usr)
    listed = "\n".join([
        "From                To                  Syms Read   Shared Object Library",
        "0x00007f0000028700  0x00007f000017d93d  No          /bin/env",
        "0x00007f0000100000  0x00007f0000200000  Yes (*)     /usr/lib/libm.so.6",
        "0x00007f0000300000  0x00007f0000400000  No          /tmp/new-1.2/libx+y.so.1",
        "                                        No          /opt/a b/lib$(id).so",
        "(*): Shared library is missing debugging information."])
    trainwatch_attached({(libc.st_dev, libc.st_ino)})
elif scenario == "held":
    trainwatch_attach_at = time.monotonic() - 0.25
    trainwatch_held()
out["commands"] = commands
print(json.dumps(out))
)PY";

class GdbPreloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access("/usr/bin/python3", X_OK) != 0) {
      GTEST_SKIP() << "/usr/bin/python3 is not installed: gdb's Python cannot be stood in for";
    }
  }
  // The scenario's JSON (its last line), and in `printed` what the code printed before it.
  nlohmann::json Run(const std::string& scenario, pid_t pid, std::string* printed = nullptr) {
    const std::string code = dir_.Write("preload.py", std::string(GdbPreloadPython()));
    const std::string harness = dir_.Write("harness.py", kHarness);
    const testing::RunResult run =
        RunBinary({"/usr/bin/python3", harness, code, scenario, std::to_string(pid)}, "",
                  std::chrono::seconds(60));
    EXPECT_EQ(run.exit_code, 0) << run.err;
    const std::size_t last = run.out.rfind('\n', run.out.size() - 2);
    if (printed != nullptr) {
      *printed = run.out.substr(0, last == std::string::npos ? 0 : last + 1);
    }
    return nlohmann::json::parse(last == std::string::npos ? run.out : run.out.substr(last + 1),
                                 nullptr, false);
  }
  TempDir dir_;
};

TEST_F(GdbPreloadTest, AProcessThatIsGoneGetsNothingAndSaysSo) {
  std::string printed;
  const nlohmann::json out = Run("preload", 0, &printed);
  ASSERT_TRUE(out.is_object()) << printed;
  // pid 0 is no process: nothing read, said plainly, and gdb's own reading left on.
  EXPECT_EQ(out["added"], 0) << out.dump(1);
  EXPECT_TRUE(out["commands"].empty()) << out.dump(1);
  EXPECT_NE(printed.find("trainwatch: libraries not read before the attach:"), std::string::npos)
      << printed;
}

TEST_F(GdbPreloadTest, ARunningInterpretersLibrariesAreAddedWhereTheyAreMapped) {
  // A real process of this mount namespace: the test's own sleeping child.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::execl("/usr/bin/python3", "python3", "-c", "import time, zlib; time.sleep(60)", nullptr);
    ::_exit(127);
  }
  ::usleep(300 * 1000);  // its libraries mapped
  std::string printed;
  const nlohmann::json out = Run("preload", child, &printed);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_TRUE(out.is_object()) << printed;
  EXPECT_GE(out["added"].get<int>(), 2) << out.dump(1);
  const auto commands = out["commands"].get<std::vector<std::string>>();
  ASSERT_FALSE(commands.empty());
  EXPECT_EQ(commands.front(), "set auto-solib-add off");
  // libc, whose first segment is at address 0 of the file: added at the start of its mapping.
  EXPECT_NE(std::find(commands.begin(), commands.end(), out.value("libc", "?")), commands.end())
      << out.dump(1);
  // Never the interpreter itself (gdb has it as the program), and the eval loop looked up.
  for (const std::string& command : commands) {
    EXPECT_EQ(command.find("/usr/bin/python3"), std::string::npos) << command;
  }
  EXPECT_EQ(commands.back(), "info line _PyEval_EvalFrameDefault");
  EXPECT_NE(printed.find("trainwatch: read "), std::string::npos) << printed;
}

TEST_F(GdbPreloadTest, ARankInAnotherMountNamespaceGetsNothingPreloaded) {
  if (::geteuid() != 0 || std::system("unshare -m true 2>/dev/null") != 0) {
    GTEST_SKIP() << "unshare -m needs root here: no process in another mount namespace";
  }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::execl("/usr/bin/unshare", "unshare", "-m", "sleep", "60", nullptr);
    ::_exit(127);
  }
  ::usleep(300 * 1000);  // unshare has become sleep, in its own namespace
  std::string printed;
  const nlohmann::json out = Run("preload", child, &printed);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_TRUE(out.is_object()) << printed;
  EXPECT_EQ(out["added"], 0);
  // gdb reads its libraries itself, inside its namespace: its own reading stays on.
  EXPECT_TRUE(out["commands"].empty()) << out.dump(1);
  EXPECT_NE(printed.find("in another mount namespace"), std::string::npos) << printed;
}

TEST_F(GdbPreloadTest, AfterTheAttachOnlyTheLibrariesNotAddedAreReadAndNoNameIsSyntax) {
  const nlohmann::json out = Run("attached", 0);
  ASSERT_TRUE(out.is_object());
  // The first was added under another name of the same file (/usr/bin for /bin); libm's
  // symbols are read; the others are read by gdb, each by a pattern matching its name alone.
  EXPECT_EQ(
      out["commands"],
      nlohmann::json::array({"info sharedlibrary", "sharedlibrary ^/tmp/new-1\\.2/libx+y\\.so\\.1$",
                             "sharedlibrary ^/opt/a.b/lib..id.\\.so$"}))
      << out.dump(1);
}

TEST_F(GdbPreloadTest, TheHoldIsTimedFromTheAttachAndReadBack) {
  std::string printed;
  Run("held", 0, &printed);
  const std::optional<double> held = HeldSecondsIn(printed);
  ASSERT_TRUE(held.has_value()) << printed;
  EXPECT_GE(*held, 0.25);
  EXPECT_LT(*held, 5.0);
}

TEST(HeldSecondsIn, ReadsOnlyTheLineGdbPrintedAtTheDetach) {
  EXPECT_EQ(HeldSecondsIn("[Inferior 1 (process 42) detached]\ntrainwatch: rank held 0.518 s "
                          "(attach to detach)\n"),
            0.518);
  EXPECT_EQ(HeldSecondsIn("trainwatch: rank held 2 s (attach to detach)"), 2.0);
  // Not printed (gdb attached at once, or died before the detach), not at a line's start (a
  // rank's own source quoted by py-bt), or no number.
  EXPECT_EQ(HeldSecondsIn("Thread 1 ...\n"), std::nullopt);
  EXPECT_EQ(HeldSecondsIn("  print('trainwatch: rank held 0.1 s')\n"), std::nullopt);
  EXPECT_EQ(HeldSecondsIn("\ntrainwatch: rank held soon"), std::nullopt);
}

}  // namespace
}  // namespace trainwatch::capture
