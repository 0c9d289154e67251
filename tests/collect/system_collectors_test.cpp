#include "collect/system_collectors.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace trainwatch::collect {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;
using trainwatch::testing::TempDir;

// A pid no process can have: above the kernel's largest pid_max (2^22).
constexpr pid_t kNoSuchPid = 99999999;
// Shaped like a Hugging Face token: hf_ and 34 letters.
const std::string kHfToken = "hf_" + std::string(34, 'q');

const Artifact* FindArtifact(const CollectorResult& result, const std::string& path) {
  for (const Artifact& artifact : result.artifacts) {
    if (artifact.path == path) {
      return &artifact;
    }
  }
  return nullptr;
}

std::vector<std::string> Paths(const CollectorResult& result) {
  std::vector<std::string> paths;
  for (const Artifact& artifact : result.artifacts) {
    paths.push_back(artifact.path);
  }
  return paths;
}

std::uint64_t SumOfSizes(const CollectorResult& result) {
  std::uint64_t sum = 0;
  for (const Artifact& artifact : result.artifacts) {
    sum += artifact.source_file.empty() ? artifact.content.size() : artifact.length;
  }
  return sum;
}

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

void SetAge(const std::string& path, std::chrono::hours age) {
  fs::last_write_time(path, fs::file_time_type::clock::now() - age);
}

// ---- names ----

TEST(SafeBundleNameTest, MakesOneSafeName) {
  struct Case {
    std::string path;
    std::string name;
  };
  for (const Case& c : std::vector<Case>{
           {"/data/run1/rank0.log", "data_run1_rank0.log"},
           {"./train.log", "train.log"},
           {"relative/x y.txt", "relative_x_y.txt"},
           {"/a/../b", "a_.._b"},
           {"/", "unnamed"},
           {"..", "unnamed"},
           {"", "unnamed"},
           {"kworker/0:1", "kworker_0_1"},
       }) {
    EXPECT_EQ(SafeBundleName(c.path), c.name) << c.path;
  }
}

TEST(ProcessFolderTest, PidAndSafeComm) {
  EXPECT_EQ(ProcessFolder({42, "kworker/0:1", ""}), "processes/42-kworker_0_1");
  EXPECT_EQ(ProcessFolder({42, "", ""}), "processes/42");
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
  EXPECT_GE(result.duration_seconds, 0);
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

// ---- system ----

TEST(CollectSystemFactsTest, RealMachine) {
  CollectorResult result = CollectSystemFacts();
  EXPECT_EQ(result.name, "system");
  EXPECT_EQ(result.status, CollectorStatus::kOk) << result.detail;
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  const Artifact* hostname = FindArtifact(result, "system/hostname.txt");
  ASSERT_NE(hostname, nullptr);
  EXPECT_EQ(hostname->content, std::string(host) + "\n");
  for (const char* path :
       {"system/cpuinfo.txt", "system/meminfo.txt", "system/loadavg.txt", "system/uptime.txt",
        "system/kernel.txt", "system/cpu-governors.txt", "system/network.txt"}) {
    const Artifact* artifact = FindArtifact(result, path);
    ASSERT_NE(artifact, nullptr) << path;
    if (std::string(path) != "system/network.txt") {  // a bare sandbox may have no address
      EXPECT_FALSE(artifact->content.empty()) << path;
    }
  }
  EXPECT_EQ(FindArtifact(result, "system/kernel.txt")->content.rfind("Linux ", 0), 0u);
  EXPECT_NE(FindArtifact(result, "system/meminfo.txt")->content.find("MemTotal:"),
            std::string::npos);
  EXPECT_NE(FindArtifact(result, "system/uptime.txt")->content.find(" days, "), std::string::npos);
  EXPECT_EQ(result.bytes, SumOfSizes(result));
}

TEST(CollectSystemFactsTest, GovernorsOnePerCpuInNumericOrder) {
  TempDir sys;
  const std::string cpus = "devices/system/cpu/";
  for (const char* cpu : {"cpu0", "cpu1", "cpu2", "cpu10"}) {
    fs::create_directories(sys.path() / (cpus + cpu + "/cpufreq"));
  }
  fs::create_directories(sys.path() / (cpus + "cpufreq"));  // not a cpu
  fs::create_directories(sys.path() / (cpus + "cpuidle"));  // not a cpu
  sys.Write(cpus + "cpu0/cpufreq/scaling_governor", "performance\n");
  sys.Write(cpus + "cpu2/cpufreq/scaling_governor", "powersave\n");
  sys.Write(cpus + "cpu10/cpufreq/scaling_governor", "performance\n");
  TempDir empty_proc;
  CollectorResult result = CollectSystemFacts(empty_proc.path().string(), sys.path().string());
  const Artifact* governors = FindArtifact(result, "system/cpu-governors.txt");
  ASSERT_NE(governors, nullptr);
  EXPECT_EQ(governors->content,
            "cpu0: performance\ncpu1: none\ncpu2: powersave\ncpu10: performance\n");
  // No /proc files there: detail lines, and still ok (uname, hostname...).
  EXPECT_EQ(result.status, CollectorStatus::kOk);
  EXPECT_EQ(FindArtifact(result, "system/cpuinfo.txt"), nullptr);
  EXPECT_NE(result.detail.find("cpuinfo"), std::string::npos) << result.detail;

  CollectorResult no_sys = CollectSystemFacts("/proc", sys.PathOf("nope"));
  const Artifact* none = FindArtifact(no_sys, "system/cpu-governors.txt");
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(none->content.rfind("none", 0), 0u);
}

// ---- disk usage ----

TEST(CollectDiskUsageTest, DirectoriesAndMissingOnes) {
  TempDir dir;
  const std::string missing = dir.PathOf("gone");
  CollectorResult result = CollectDiskUsage({dir.path().string(), missing});
  EXPECT_EQ(result.name, "disk_usage");
  EXPECT_EQ(result.status, CollectorStatus::kOk);
  const Artifact* usage = FindArtifact(result, "system/disk-usage.txt");
  ASSERT_NE(usage, nullptr);
  EXPECT_NE(usage->content.find(dir.path().string() + ": total "), std::string::npos)
      << usage->content;
  EXPECT_NE(usage->content.find("inodes total="), std::string::npos);
  EXPECT_NE(usage->content.find(missing + ": No such file or directory"), std::string::npos);
  EXPECT_NE(result.detail.find(missing), std::string::npos);
  EXPECT_EQ(result.bytes, usage->content.size());

  EXPECT_EQ(CollectDiskUsage({missing}).status, CollectorStatus::kFailed);
  EXPECT_EQ(CollectDiskUsage({}).status, CollectorStatus::kSkipped);
}

// ---- log tails ----

TEST(CollectLogTailsTest, TailsStartAtALine) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 100; ++i) {
    text += "step " + std::to_string(i) + " loss " + std::string(i % 7, 'x') + "\n";
  }
  fs::create_directories(dir.path() / "run1");
  const std::string big = dir.Write("run1/rank0.log", text);
  const std::string small = dir.Write("small.log", "one\ntwo\n");
  const std::string missing = dir.PathOf("missing.log");
  const std::uint64_t tail = 301;

  CollectorResult result = CollectLogTails({big, small, missing}, tail);
  EXPECT_EQ(result.name, "log_tails");
  EXPECT_EQ(result.status, CollectorStatus::kOk);
  EXPECT_TRUE(result.truncated);
  ASSERT_EQ(result.artifacts.size(), 2u);
  EXPECT_NE(result.detail.find(missing), std::string::npos);

  const Artifact& a = result.artifacts[0];
  EXPECT_EQ(a.path, "logs/" + SafeBundleName(big));
  EXPECT_EQ(a.path.find('/', 5), std::string::npos);
  EXPECT_EQ(a.source_file, fs::canonical(big).string());
  EXPECT_TRUE(a.content.empty());
  EXPECT_GE(a.offset, text.size() - tail);
  EXPECT_LT(a.offset, text.size() - tail + 20);  // within a line of the cut
  EXPECT_EQ(text[a.offset - 1], '\n');
  EXPECT_EQ(a.offset + a.length, text.size());

  const Artifact& b = result.artifacts[1];
  EXPECT_EQ(b.offset, 0u);
  EXPECT_EQ(b.length, 8u);
  EXPECT_EQ(result.bytes, a.length + b.length);
}

TEST(CollectLogTailsTest, CutOnALineStartStaysAndNamesStayUnique) {
  TempDir dir;
  fs::create_directories(dir.path() / "a");
  const std::string one = dir.Write("a/b.log", "0123456789\nabcdefghi\n");  // 21 bytes
  const std::string two = dir.Write("a_b.log", "x\n");
  CollectorResult result = CollectLogTails({one, two}, 10);
  ASSERT_EQ(result.artifacts.size(), 2u);
  EXPECT_EQ(result.artifacts[0].offset, 11u);  // "abcdefghi\n" is exactly the last 10 bytes
  EXPECT_EQ(result.artifacts[0].length, 10u);
  EXPECT_NE(result.artifacts[0].path, result.artifacts[1].path);
  EXPECT_EQ(result.artifacts[1].path.substr(result.artifacts[1].path.size() - 6), "-2.log");
}

TEST(CollectLogTailsTest, ALineLongerThanTheWindowIsCut) {
  TempDir dir;
  const std::string text = std::string(200000, 'y') + "\nend\n";
  const std::string file = dir.Write("long.log", text);
  CollectorResult result = CollectLogTails({file}, 100000);  // the window sees no newline
  ASSERT_EQ(result.artifacts.size(), 1u);
  EXPECT_EQ(result.artifacts[0].offset, text.size() - 100000);
  EXPECT_EQ(result.artifacts[0].length, 100000u);

  CollectorResult near = CollectLogTails({file}, 100);  // the newline is within reach
  ASSERT_EQ(near.artifacts.size(), 1u);
  EXPECT_EQ(near.artifacts[0].offset, text.size() - 4);
  EXPECT_EQ(near.artifacts[0].length, 4u);
}

TEST(CollectLogTailsTest, TheLastLineIsCutRatherThanLeftEmpty) {
  TempDir dir;
  const std::string text = std::string(1000, 'z') + "\n";
  const std::string file = dir.Write("one-line.log", text);
  CollectorResult result = CollectLogTails({file}, 100);
  ASSERT_EQ(result.artifacts.size(), 1u);
  EXPECT_EQ(result.artifacts[0].offset, text.size() - 100);
  EXPECT_EQ(result.artifacts[0].length, 100u);
}

TEST(CollectLogTailsTest, NothingReadable) {
  TempDir dir;
  EXPECT_EQ(CollectLogTails({dir.PathOf("nope")}, 10).status, CollectorStatus::kFailed);
  CollectorResult not_file = CollectLogTails({dir.path().string()}, 10);
  EXPECT_EQ(not_file.status, CollectorStatus::kFailed);
  EXPECT_NE(not_file.detail.find("not a regular file"), std::string::npos);
  EXPECT_EQ(CollectLogTails({}, 10).status, CollectorStatus::kSkipped);
}

// ---- directory copy ----

TEST(CollectDirectoryTest, NewestFirstUpToTheCap) {
  TempDir dir;
  fs::create_directories(dir.path() / "logs" / "sub");
  const std::string newest = dir.Write("logs/sub/newest.log", std::string(100, 'n'));
  const std::string middle = dir.Write("logs/middle.log", "line one\nline two\nline three\n");
  const std::string old = dir.Write("logs/old.log", std::string(10, 'o'));
  SetAge(newest, std::chrono::hours(1));
  SetAge(middle, std::chrono::hours(2));
  SetAge(old, std::chrono::hours(3));
  const std::string root = dir.PathOf("logs");

  CollectorResult all = CollectDirectory("habana_logs", root, "habana_logs", 1 << 20);
  EXPECT_EQ(all.name, "habana_logs");
  EXPECT_EQ(all.status, CollectorStatus::kOk) << all.detail;
  EXPECT_FALSE(all.truncated);
  EXPECT_EQ(Paths(all),
            (std::vector<std::string>{"habana_logs/sub/newest.log", "habana_logs/middle.log",
                                      "habana_logs/old.log"}));
  EXPECT_EQ(all.artifacts[0].source_file, root + "/sub/newest.log");
  EXPECT_EQ(all.bytes, 100u + 29u + 10u);

  // 100 + 15: the middle file crosses; its last whole line ("line three\n") fits, old is out.
  CollectorResult capped = CollectDirectory("habana_logs", root, "habana_logs", 115);
  EXPECT_EQ(capped.status, CollectorStatus::kOk);
  EXPECT_TRUE(capped.truncated);
  ASSERT_EQ(capped.artifacts.size(), 2u) << ::testing::PrintToString(Paths(capped));
  EXPECT_EQ(capped.artifacts[0].path, "habana_logs/sub/newest.log");
  EXPECT_EQ(capped.artifacts[1].path, "habana_logs/middle.log");
  EXPECT_EQ(capped.artifacts[1].offset, 18u);
  EXPECT_EQ(capped.artifacts[1].length, 11u);
  EXPECT_LE(capped.bytes, 115u);
  EXPECT_NE(capped.detail.find("left out 1 older file"), std::string::npos) << capped.detail;

  // A cap the newest file alone exceeds: its tail (no newline: cut where the cap says).
  CollectorResult tiny = CollectDirectory("habana_logs", root, "habana_logs", 40);
  ASSERT_EQ(tiny.artifacts.size(), 1u);
  EXPECT_EQ(tiny.artifacts[0].offset, 60u);
  EXPECT_EQ(tiny.artifacts[0].length, 40u);
  EXPECT_TRUE(tiny.truncated);
}

TEST(CollectDirectoryTest, NeverFollowsSymlinks) {
  TempDir dir;
  fs::create_directories(dir.path() / "logs");
  fs::create_directories(dir.path() / "outside");
  dir.Write("outside/secret.txt", "not for the bundle");
  dir.Write("logs/real.log", "ok\n");
  fs::create_directory_symlink("/etc", dir.path() / "logs" / "etc_link");
  fs::create_symlink("/etc/hostname", dir.path() / "logs" / "hostname_link");
  fs::create_directory_symlink(dir.path() / "outside", dir.path() / "logs" / "sub_link");

  CollectorResult result = CollectDirectory("habana_logs", dir.PathOf("logs"), "hl", 1 << 20);
  EXPECT_EQ(result.status, CollectorStatus::kOk);
  EXPECT_EQ(Paths(result), std::vector<std::string>{"hl/real.log"});
  for (const char* link : {"etc_link", "hostname_link", "sub_link"}) {
    EXPECT_NE(result.detail.find("skipped symlink (not followed): " + std::string(link)),
              std::string::npos)
        << result.detail;
  }
}

TEST(CollectDirectoryTest, TheNamedDirectoryMayBeALink) {
  TempDir dir;
  fs::create_directories(dir.path() / "real");
  dir.Write("real/a.log", "a\n");
  fs::create_directory_symlink(dir.path() / "real", dir.path() / "link");
  CollectorResult result = CollectDirectory("habana_logs", dir.PathOf("link"), "hl", 100);
  EXPECT_EQ(Paths(result), std::vector<std::string>{"hl/a.log"});
}

TEST(CollectDirectoryTest, MissingAndEmpty) {
  TempDir dir;
  CollectorResult missing = CollectDirectory("habana_logs", dir.PathOf("nope"), "hl", 100);
  EXPECT_EQ(missing.status, CollectorStatus::kMissing);
  EXPECT_NE(missing.detail.find(dir.PathOf("nope")), std::string::npos);
  CollectorResult empty = CollectDirectory("habana_logs", dir.path().string(), "hl", 100);
  EXPECT_EQ(empty.status, CollectorStatus::kOk);
  EXPECT_TRUE(empty.artifacts.empty());
  const std::string file = dir.Write("file", "x");
  EXPECT_EQ(CollectDirectory("habana_logs", file, "hl", 100).status, CollectorStatus::kFailed);
}

// ---- extra paths ----

TEST(CollectPathsTest, FilesCopiedDirectoriesListed) {
  TempDir dir;
  const std::string config = dir.Write("train.yaml", "lr: 0.1\nbatch: 32\n");
  fs::create_directories(dir.path() / "ckpt" / "step100" / "shards");
  dir.Write("ckpt/latest", "step100");
  dir.Write("ckpt/step100/model.pt", std::string(5000, 'm'));
  dir.Write("ckpt/step100/shards/deep.bin", "too deep to list");
  fs::create_directory_symlink("/etc", dir.path() / "ckpt" / "etc_link");
  const std::string missing = dir.PathOf("missing");

  CollectorResult result = CollectPaths({config, dir.PathOf("ckpt"), missing}, 10);
  EXPECT_EQ(result.name, "extra_paths");
  EXPECT_EQ(result.status, CollectorStatus::kOk);
  EXPECT_TRUE(result.truncated);
  EXPECT_NE(result.detail.find(missing), std::string::npos);
  ASSERT_EQ(result.artifacts.size(), 2u);

  const Artifact& file = result.artifacts[0];
  EXPECT_EQ(file.path, "extra/" + SafeBundleName(config));
  EXPECT_EQ(file.source_file, fs::canonical(config).string());
  EXPECT_EQ(file.offset, 0u);
  EXPECT_EQ(file.length, 10u);

  const Artifact& listing = result.artifacts[1];
  EXPECT_EQ(listing.path, "extra/" + SafeBundleName(dir.PathOf("ckpt")) + ".listing.txt");
  const std::string& text = listing.content;
  EXPECT_NE(text.find(" latest\n"), std::string::npos) << text;
  EXPECT_NE(text.find("d "), std::string::npos);
  EXPECT_NE(text.find(" step100/\n"), std::string::npos);
  EXPECT_NE(text.find("5000 "), std::string::npos);
  EXPECT_NE(text.find(" step100/model.pt\n"), std::string::npos);
  EXPECT_NE(text.find(" step100/shards/\n"), std::string::npos);
  EXPECT_EQ(text.find("deep.bin"), std::string::npos) << "two levels only";
  EXPECT_NE(text.find("etc_link -> /etc\n"), std::string::npos);
  EXPECT_EQ(text.find("passwd"), std::string::npos) << "links are not followed";
  EXPECT_EQ(result.bytes, 10u + text.size());

  EXPECT_EQ(CollectPaths({missing}, 10).status, CollectorStatus::kFailed);
  EXPECT_EQ(CollectPaths({}, 10).status, CollectorStatus::kSkipped);
}

}  // namespace
}  // namespace trainwatch::collect
