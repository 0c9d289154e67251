#include "collect/process_collectors.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "collect/collector_results.h"
#include "core/proc_files.h"
#include "support/temp_dir.h"

namespace trainwatch::collect {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;
using trainwatch::testing::FindArtifact;
using trainwatch::testing::Paths;
using trainwatch::testing::SumOfSizes;
using trainwatch::testing::TempDir;

// A pid no process can have: above the kernel's largest pid_max (2^22).
constexpr pid_t kNoSuchPid = 99999999;
// Shaped like a Hugging Face token: hf_ and 34 letters.
const std::string kHfToken = "hf_" + std::string(34, 'q');

// A real process to look at: `/bin/sh -c 'read line' <marker>` in `cwd`, with exactly `env`,
// blocked reading a pipe until the test ends (no sleeping, no timing). The constructor returns
// once the exec happened, so /proc shows the shell and not a copy of this test.
class Child {
 public:
  Child(const std::string& marker, const std::vector<std::string>& env, const std::string& cwd) {
    int input[2];
    int exec_done[2];
    EXPECT_EQ(::pipe(input), 0);
    EXPECT_EQ(::pipe2(exec_done, O_CLOEXEC), 0);
    std::vector<char*> envp;
    envp.reserve(env.size() + 1);
    for (const std::string& entry : env) {
      envp.push_back(const_cast<char*>(entry.c_str()));
    }
    envp.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(input[0], 0);
      ::close(input[0]);
      ::close(input[1]);
      ::close(exec_done[0]);
      if (::chdir(cwd.c_str()) != 0) {
        ::_exit(126);
      }
      ::execle("/bin/sh", "sh", "-c", "read line", marker.c_str(), nullptr, envp.data());
      ::_exit(127);
    }
    ::close(input[0]);
    ::close(exec_done[1]);
    input_ = input[1];
    char byte;
    // EOF once exec closed the CLOEXEC end.
    while (::read(exec_done[0], &byte, 1) < 0 && errno == EINTR) {
    }
    ::close(exec_done[0]);
  }
  ~Child() {
    ::close(input_);  // `read` sees EOF and the shell exits
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int input_ = -1;
};

std::vector<std::string> ChildEnv() {
  return {"MY_TEST_TOKEN=abc", "HF_TOKEN=" + kHfToken, "NOTES=pulled with " + kHfToken,
          "PLAIN_SETTING=visible", "PATH=/usr/bin:/bin"};
}

std::string UniqueMarker(const char* what) {
  return "trainwatch-test-" + std::string(what) + "-" + std::to_string(::getpid());
}

// A directory laid out like /proc for one process.
void FakeProcess(const TempDir& proc, pid_t pid, const std::string& comm,
                 const std::string& cmdline) {
  fs::create_directories(proc.path() / std::to_string(pid));
  proc.Write(std::to_string(pid) + "/comm", comm + "\n");
  proc.Write(std::to_string(pid) + "/cmdline", cmdline);
}

// ---- processes ----

TEST(ProcessFolderTest, PidAndSafeComm) {
  EXPECT_EQ(ProcessFolder(42, "kworker/0:1"), "processes/42-kworker_0_1");
  EXPECT_EQ(ProcessFolder(42, ""), "processes/42");
}

// ---- processes ----

TEST(FindProcessesTest, MatchesCommandLinesInAFakeProc) {
  TempDir proc;
  FakeProcess(proc, 100, "python3", "python3\0train.py\0--rank\0000\0"s);
  FakeProcess(proc, 200, "kworker/0:1", "");  // a kernel thread: no command line
  FakeProcess(proc, 300, "bash", "bash\0-c\0tail -f x\0"s);
  FakeProcess(proc, ::getpid(), "self", "python3\0train.py\0"s);  // this process: never
  fs::create_directories(proc.path() / "sys");                    // not a pid

  Result<std::vector<ProcessInfo>> found = FindProcesses("train\\.py", proc.path().string());
  ASSERT_TRUE(found.ok()) << found.error().message;
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].pid, 100);
  EXPECT_EQ((*found)[0].comm, "python3");
  EXPECT_EQ((*found)[0].cmdline, "python3 train.py --rank 0");

  Result<std::vector<ProcessInfo>> all = FindProcesses("", proc.path().string());
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 2u);  // 100 and 300: not the kernel thread, not this process

  Result<std::vector<ProcessInfo>> none = FindProcesses("Train", proc.path().string());
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty()) << "case-sensitive";
}

TEST(FindProcessesTest, BadPatternIsAnError) {
  Result<std::vector<ProcessInfo>> found = FindProcesses("train(");
  ASSERT_FALSE(found.ok());
  EXPECT_NE(found.error().message.find("train("), std::string::npos);
}

TEST(FindProcessesTest, FindsARealChildByItsArguments) {
  TempDir dir;
  const std::string marker = UniqueMarker("find");
  Child child(marker, ChildEnv(), dir.path().string());
  Result<std::vector<ProcessInfo>> found = FindProcesses(marker);
  ASSERT_TRUE(found.ok()) << found.error().message;
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].pid, child.pid());
  EXPECT_EQ((*found)[0].comm, "sh");
  EXPECT_EQ((*found)[0].cmdline, "sh -c read line " + marker);
}

TEST(DescribeProcessTest, RealAndGone) {
  TempDir dir;
  Child child(UniqueMarker("describe"), ChildEnv(), dir.path().string());
  Result<ProcessInfo> info = DescribeProcess(child.pid());
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_EQ(info->comm, "sh");
  EXPECT_FALSE(DescribeProcess(kNoSuchPid).ok());
}

TEST(CollectProcessesTest, RealChild) {
  TempDir dir;
  const std::string marker = UniqueMarker("processes");
  Child child(marker, ChildEnv(), dir.path().string());
  CollectorResult result = CollectProcesses({child.pid(), kNoSuchPid});
  EXPECT_EQ(result.name, "processes");
  EXPECT_EQ(result.status, CollectorStatus::kOk) << result.detail;
  EXPECT_NE(result.detail.find("pid " + std::to_string(kNoSuchPid)), std::string::npos)
      << result.detail;

  const std::string folder = "processes/" + std::to_string(child.pid()) + "-sh/";
  const Artifact* cmdline = FindArtifact(result, folder + "cmdline.txt");
  ASSERT_NE(cmdline, nullptr);
  EXPECT_EQ(cmdline->content, "sh -c 'read line' " + marker + "\n");
  const Artifact* status = FindArtifact(result, folder + "status.txt");
  ASSERT_NE(status, nullptr);
  EXPECT_NE(status->content.find("Pid:\t" + std::to_string(child.pid()) + "\n"), std::string::npos);
  const Artifact* cwd = FindArtifact(result, folder + "cwd.txt");
  ASSERT_NE(cwd, nullptr);
  EXPECT_EQ(cwd->content, fs::canonical(dir.path()).string() + "\n");
  const Artifact* exe = FindArtifact(result, folder + "exe.txt");
  ASSERT_NE(exe, nullptr);
  EXPECT_FALSE(exe->content.empty());
  const Artifact* limits = FindArtifact(result, folder + "limits.txt");
  ASSERT_NE(limits, nullptr);
  EXPECT_NE(limits->content.find("Max open files"), std::string::npos);
  const Artifact* open_files = FindArtifact(result, folder + "open-files.txt");
  ASSERT_NE(open_files, nullptr);
  EXPECT_NE(open_files->content.find("0 -> pipe:["), std::string::npos) << open_files->content;
  EXPECT_EQ(result.bytes, SumOfSizes(result));
}

TEST(CollectProcessesTest, FakeProcPartsMissing) {
  TempDir proc;
  FakeProcess(proc, 42, "kworker/0:1", "");
  proc.Write("42/status", "Name:\tkworker/0:1\n");
  CollectorResult result = CollectProcesses({42}, proc.path().string());
  EXPECT_EQ(result.status, CollectorStatus::kOk);
  EXPECT_NE(FindArtifact(result, "processes/42-kworker_0_1/status.txt"), nullptr);
  EXPECT_EQ(FindArtifact(result, "processes/42-kworker_0_1/limits.txt"), nullptr);
  EXPECT_NE(result.detail.find("limits"), std::string::npos) << result.detail;
  EXPECT_NE(result.detail.find("fd"), std::string::npos) << result.detail;
}

TEST(CollectProcessesTest, NoneOrGone) {
  EXPECT_EQ(CollectProcesses({}).status, CollectorStatus::kSkipped);
  CollectorResult gone = CollectProcesses({kNoSuchPid});
  EXPECT_EQ(gone.status, CollectorStatus::kFailed);
  EXPECT_TRUE(gone.artifacts.empty());
  EXPECT_FALSE(gone.detail.empty());
}

// ---- environment ----

std::shared_ptr<const Redactor> MakeRedactor() {
  Result<std::shared_ptr<const Redactor>> redactor = Redactor::Create();
  EXPECT_TRUE(redactor.ok()) << redactor.error().message;
  return redactor.ok() ? *redactor : nullptr;
}

TEST(CollectEnvironmentTest, RealChildSecretsRedacted) {
  std::shared_ptr<const Redactor> redactor = MakeRedactor();
  ASSERT_NE(redactor, nullptr);
  ASSERT_EQ(::setenv("TW_TEST_DB_PASSWORD", "hunter2hunter2", 1), 0);
  TempDir dir;
  Child child(UniqueMarker("environ"), ChildEnv(), dir.path().string());
  RedactionCounts counts;
  CollectorResult result = CollectEnvironment({child.pid(), kNoSuchPid}, *redactor, counts);
  ::unsetenv("TW_TEST_DB_PASSWORD");

  EXPECT_EQ(result.name, "environment");
  EXPECT_EQ(result.status, CollectorStatus::kOk) << result.detail;
  EXPECT_NE(result.detail.find(std::to_string(kNoSuchPid)), std::string::npos);
  const Artifact* env =
      FindArtifact(result, "processes/" + std::to_string(child.pid()) + "-sh/environ.txt");
  ASSERT_NE(env, nullptr) << ::testing::PrintToString(Paths(result));
  EXPECT_FALSE(env->redact) << "redacted here already";
  EXPECT_NE(env->content.find("MY_TEST_TOKEN=" + std::string(kRedacted)), std::string::npos)
      << env->content;
  EXPECT_NE(env->content.find("HF_TOKEN=" + std::string(kRedacted)), std::string::npos);
  EXPECT_EQ(env->content.find("=abc"), std::string::npos);
  EXPECT_EQ(env->content.find(kHfToken), std::string::npos) << "not even in NOTES";
  EXPECT_NE(env->content.find("PLAIN_SETTING=visible\n"), std::string::npos);

  const Artifact* own = FindArtifact(result, "system/trainwatch-environ.txt");
  ASSERT_NE(own, nullptr);
  EXPECT_FALSE(own->redact);
  EXPECT_NE(own->content.find("TW_TEST_DB_PASSWORD="), std::string::npos);
  EXPECT_EQ(own->content.find("hunter2"), std::string::npos);

  EXPECT_GE(counts.total(), 4u);
  EXPECT_EQ(counts.by_rule.count("env:MY_TEST_TOKEN"), 1u);
  EXPECT_EQ(result.bytes, SumOfSizes(result));
}

TEST(CollectEnvironmentTest, UnreadableAndGoneAreDetailLines) {
  std::shared_ptr<const Redactor> redactor = MakeRedactor();
  ASSERT_NE(redactor, nullptr);
  TempDir proc;
  FakeProcess(proc, 10, "python3", "python3\0"s);
  proc.Write("10/environ", "A=1\0B=2\0"s);
  FakeProcess(proc, 11, "python3", "python3\0"s);
  fs::create_directories(proc.path() / "11" / "environ");  // read() fails: EISDIR
  FakeProcess(proc, 12, "zombie", "");
  proc.Write("12/environ", "");
  RedactionCounts counts;
  CollectorResult result =
      CollectEnvironment({10, 11, 12, 13}, *redactor, counts, proc.path().string());
  EXPECT_EQ(result.status, CollectorStatus::kOk) << result.detail;
  const Artifact* env = FindArtifact(result, "processes/10-python3/environ.txt");
  ASSERT_NE(env, nullptr);
  EXPECT_NE(env->content.find("A=1"), std::string::npos);
  EXPECT_NE(env->content.find("B=2"), std::string::npos);
  EXPECT_EQ(result.artifacts.size(), 2u) << ::testing::PrintToString(Paths(result));
  for (const char* pid : {"pid 11:", "pid 12:", "pid 13:"}) {
    EXPECT_NE(result.detail.find(pid), std::string::npos) << result.detail;
  }

  CollectorResult none = CollectEnvironment({11, 13}, *redactor, counts, proc.path().string());
  EXPECT_EQ(none.status, CollectorStatus::kFailed);
  EXPECT_NE(FindArtifact(none, "system/trainwatch-environ.txt"), nullptr) << "kept anyway";

  CollectorResult own_only = CollectEnvironment({}, *redactor, counts, proc.path().string());
  EXPECT_EQ(own_only.status, CollectorStatus::kOk);
  EXPECT_EQ(own_only.artifacts.size(), 1u);
}

TEST(CollectEnvironmentTest, AnEnvironmentPastTheCapIsCutAndSaysSo) {
  std::shared_ptr<const Redactor> redactor = MakeRedactor();
  ASSERT_NE(redactor, nullptr);
  TempDir proc;
  FakeProcess(proc, 10, "python3", "python3\0"s);
  proc.Write("10/environ", "A=1\0HUGE="s + std::string(kMaxProcFileBytes, 'v') + "\0"s);
  RedactionCounts counts;
  CollectorResult result = CollectEnvironment({10}, *redactor, counts, proc.path().string());
  EXPECT_EQ(result.status, CollectorStatus::kOk) << result.detail;
  EXPECT_TRUE(result.truncated);
  EXPECT_NE(result.detail.find("pid 10: environment cut at 4.0 MiB"), std::string::npos)
      << result.detail;
  const Artifact* env = FindArtifact(result, "processes/10-python3/environ.txt");
  ASSERT_NE(env, nullptr);
  EXPECT_EQ(env->content.rfind("A=1\n", 0), 0u);
}

TEST(CollectEnvironmentTest, PermissionDeniedWhenNotRoot) {
  if (::geteuid() == 0) {
    GTEST_SKIP() << "root reads any file";
  }
  std::shared_ptr<const Redactor> redactor = MakeRedactor();
  ASSERT_NE(redactor, nullptr);
  TempDir proc;
  FakeProcess(proc, 10, "python3", "python3\0"s);
  std::string environ_path = proc.Write("10/environ", "A=1\0"s);
  fs::permissions(environ_path, fs::perms::none);
  RedactionCounts counts;
  CollectorResult result = CollectEnvironment({10}, *redactor, counts, proc.path().string());
  EXPECT_EQ(result.status, CollectorStatus::kFailed);
  EXPECT_NE(result.detail.find("Permission denied"), std::string::npos) << result.detail;
}

}  // namespace
}  // namespace trainwatch::collect
