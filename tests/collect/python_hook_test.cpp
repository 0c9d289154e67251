// The Python hook (daemon/python/sitecustomize.py) in a real interpreter: loaded through
// PYTHONPATH, chaining the next sitecustomize, found by FindPythonHook, dumping every thread's
// stack on its signal; off with TRAINWATCH_PYTHON_HOOK=0. Skipped without /usr/bin/python3.
#include "collect/python_hook.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <thread>

#include "collect/stack_text.h"
#include "core/proc_files.h"
#include "support/file_text.h"
#include "support/temp_dir.h"

namespace trainwatch::collect {
namespace {

using namespace std::chrono_literals;
using namespace std::string_literals;
using trainwatch::testing::ReadFile;
using trainwatch::testing::TempDir;

constexpr const char* kPython = "/usr/bin/python3";

// A python3 running `script` with `env` (and nothing else), until the test ends.
class Interpreter {
 public:
  Interpreter(const std::string& script, const std::vector<std::string>& env) {
    pid_ = ::fork();
    if (pid_ == 0) {
      std::vector<char*> envp;
      for (const std::string& entry : env) {
        envp.push_back(const_cast<char*>(entry.c_str()));
      }
      envp.push_back(nullptr);
      ::execle(kPython, kPython, script.c_str(), nullptr, envp.data());
      ::_exit(127);
    }
  }
  ~Interpreter() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = 0;
};

class PythonHookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(kPython, X_OK) != 0) {
      GTEST_SKIP() << kPython << " is not installed";
    }
    std::filesystem::create_directories(dir_.PathOf("stacks"));
    std::filesystem::create_directories(dir_.PathOf("image"));
    // The image's own sitecustomize, which the hook must still load.
    dir_.Write("image/sitecustomize.py",
               "import os\nopen(os.environ['CHAIN_MARK'], 'w').write('chained')\n");
    // Ready from inside wait_for_data: a signal sent as soon as the file exists finds the
    // interpreter in it (on a loaded machine it could still be at the module's top level).
    dir_.Write("job.py",
               "import os, time\n"
               "def wait_for_data():\n    open(os.environ['READY'], 'w').write('up')\n"
               "    time.sleep(60)\nwait_for_data()\n");
  }
  std::vector<std::string> Env(bool hook_on = true) const {
    std::vector<std::string> env = PythonHookEnvironment(
        TRAINWATCH_SOURCE_PYTHON_DIR, dir_.PathOf("stacks"), dir_.PathOf("image"));
    env.push_back("CHAIN_MARK=" + dir_.PathOf("chained"));
    env.push_back("READY=" + dir_.PathOf("ready"));
    if (!hook_on) {
      env.push_back("TRAINWATCH_PYTHON_HOOK=0");
    }
    return env;
  }
  std::string Environ(pid_t pid) const {
    Result<ProcText> environ = ReadProcEnviron(pid);
    return environ ? environ->text : std::string();
  }
  bool WaitReady() const {
    for (int i = 0; i < 500 && !std::filesystem::exists(dir_.PathOf("ready")); ++i) {
      std::this_thread::sleep_for(20ms);
    }
    return std::filesystem::exists(dir_.PathOf("ready"));
  }
  TempDir dir_;
};

TEST_F(PythonHookTest, DumpsEveryThreadOnItsSignalAndChainsTheImagesSitecustomize) {
  Interpreter python(dir_.PathOf("job.py"), Env());
  ASSERT_TRUE(WaitReady());
  EXPECT_EQ(ReadFile(dir_.PathOf("chained")), "chained");
  std::string why;
  const std::optional<PythonHook> hook =
      FindPythonHook(python.pid(), Environ(python.pid()), "/proc", why);
  ASSERT_TRUE(hook.has_value()) << why;
  EXPECT_EQ(hook->signal, StacksSignal());
  ::kill(python.pid(), hook->signal);
  std::string dump;
  for (int i = 0; i < 250 && dump.empty(); ++i) {
    std::this_thread::sleep_for(20ms);
    dump = ReadHookDump(*hook);
  }
  const std::vector<ThreadStack> threads = ParseFaulthandler(dump);
  ASSERT_EQ(threads.size(), 1u) << dump;
  EXPECT_EQ(threads[0].frames.front().function, "wait_for_data") << dump;
  // It is still alive: the signal only dumped.
  EXPECT_EQ(::kill(python.pid(), 0), 0);
}

TEST_F(PythonHookTest, OffWithOneSettingAndNeverFoundWithoutIt) {
  Interpreter python(dir_.PathOf("job.py"), Env(/*hook_on=*/false));
  ASSERT_TRUE(WaitReady());
  std::string why;
  EXPECT_FALSE(FindPythonHook(python.pid(), Environ(python.pid()), "/proc", why).has_value());
  EXPECT_NE(why.find("did not load"), std::string::npos) << why;
  EXPECT_EQ(ReadFile(dir_.PathOf("chained")), "chained");  // the image's still runs
  EXPECT_FALSE(FindPythonHook(::getpid(), "PATH=/bin\0"s, "/proc", why).has_value());
  EXPECT_NE(why.find("no TRAINWATCH_STACKS_DIR"), std::string::npos) << why;
}

TEST(PythonHookEnvironment, PutsTheHookFirstOnPythonPath) {
  const std::vector<std::string> env = PythonHookEnvironment("/hook", "/state/stacks", "/a:/b");
  ASSERT_EQ(env.size(), 3u);
  EXPECT_EQ(env[0], "PYTHONPATH=/hook:/a:/b");
  EXPECT_EQ(env[1], "TRAINWATCH_STACKS_DIR=/state/stacks");
  EXPECT_EQ(env[2], "TRAINWATCH_STACKS_SIGNAL=" + std::to_string(SIGRTMIN + 3));
  EXPECT_EQ(PythonHookEnvironment("/hook", "/s", "")[0], "PYTHONPATH=/hook");
}

}  // namespace
}  // namespace trainwatch::collect
