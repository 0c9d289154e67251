// The in-process collectors of a capture: the reads a job's user can wedge (a venv or a log on
// a FUSE mount of theirs) run under a deadline, charged to that user's budget, so that a
// wedged one is left behind on a thread of its own — the pool's thread goes on, and the
// collector says it timed out and what it left behind. A read that blocks is stood for by
// opening a FIFO nobody writes (the kernel holds the thread, as a hung file system does): the
// collectors themselves open everything O_NONBLOCK, so a FIFO never blocks them.
#include "capture/builtin_collectors.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "collect/redactor.h"
#include "support/fifo_release.h"
#include "support/temp_dir.h"

namespace trainwatch::capture {
namespace {

using namespace std::chrono_literals;
using collect::CollectorResult;
using collect::CollectorStatus;

bool NoneStuck() {
  for (int i = 0; i < 500 && StuckDeadlineCalls() != 0; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  return StuckDeadlineCalls() == 0;
}

// A collector whose read blocks until `fifo` is released.
std::function<CollectorResult()> BlockingCollector(const std::string& fifo) {
  return [fifo] {
    const int fd = ::open(fifo.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ::close(fd);
    }
    CollectorResult result;
    result.name = "log_tails";
    return result;
  };
}

const CollectorResult* Named(const CollectorResults& results, const std::string& name) {
  auto found = std::find_if(results.begin(), results.end(),
                            [&](const CollectorResult& result) { return result.name == name; });
  return found == results.end() ? nullptr : &*found;
}

TEST(BuiltinCollectors, AReadPastItsDeadlineIsLeftBehindAndSaidTimedOut) {
  testing::TempDir dir;
  const std::string fifo = dir.PathOf("log-on-fuse");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const DeadlineBudget budget;
  const auto started = std::chrono::steady_clock::now();
  const CollectorResult result = CollectWithDeadline("log_tails", "the tails of " + fifo,
                                                     BlockingCollector(fifo), 50ms, budget);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 1s);  // the caller's thread went on
  EXPECT_EQ(result.name, "log_tails");
  EXPECT_EQ(result.status, CollectorStatus::kTimedOut);
  EXPECT_NE(result.detail.find("the tails of " + fifo + ": gave up after 50 ms"), std::string::npos)
      << result.detail;
  EXPECT_NE(result.detail.find("left behind"), std::string::npos) << result.detail;
  EXPECT_TRUE(result.artifacts.empty());
  EXPECT_EQ(budget.stuck(), 1u);  // the read waits on a thread of its own
  testing::ReleaseFifoReader(fifo);
  EXPECT_TRUE(NoneStuck());
  EXPECT_EQ(budget.stuck(), 0u);
}

TEST(BuiltinCollectors, AResultInTimeIsPassedOnAsItIs) {
  CollectorResult result = CollectWithDeadline(
      "disk_usage", "the disk usage of /",
      [] {
        CollectorResult ok;
        ok.name = "disk_usage";
        collect::AddText(ok, "system/disk-usage.txt", "/: total 1 GiB\n");
        return ok;
      },
      1s, DeadlineBudget());
  EXPECT_EQ(result.status, CollectorStatus::kOk);
  ASSERT_EQ(result.artifacts.size(), 1u);
  EXPECT_EQ(result.artifacts[0].content, "/: total 1 GiB\n");
  EXPECT_TRUE(result.detail.empty());
}

// The job's user has wedged as many reads as their budget holds: their next capture's reads
// of what they can name are refused at once ("not tried"), not waited on; the rest of the
// capture (the environment, processes, /proc facts) is taken as ever.
TEST(BuiltinCollectors, AJobThatExitedBeforeItsCaptureIsNotAFailureOfTheLiveCollectors) {
  testing::TempDir dir;
  const pid_t child = ::fork();
  if (child == 0) {
    ::_exit(0);
  }
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);  // gone: as a crashed rank is by its capture
  Result<std::shared_ptr<const collect::Redactor>> redactor = collect::Redactor::Create();
  ASSERT_TRUE(redactor.ok());
  CaptureRequest request;
  request.incident.id = "i-1";
  request.pids = {child};
  source::WriterProcess remembered;
  remembered.pid = child;
  remembered.comm = "python3";
  remembered.cmdline = std::string("python3\0train.py\0", 17);
  remembered.environ = std::string("RANK=0\0", 7);
  request.remembered = {remembered};
  config::CaptureConfig config;
  config.habana_logs = dir.PathOf("no-habana-logs");
  collect::RedactionCounts redactions;
  const CollectorResults results =
      RunBuiltinCollectors(request, config, dir.path().string(), **redactor, redactions, "/proc");
  ASSERT_NE(Named(results, "exited_processes"), nullptr);
  EXPECT_EQ(Named(results, "exited_processes")->status, CollectorStatus::kOk);
  for (const char* name : {"environment", "processes"}) {
    ASSERT_NE(Named(results, name), nullptr) << name;
    EXPECT_EQ(Named(results, name)->status, CollectorStatus::kSkipped) << name;
    EXPECT_NE(Named(results, name)->detail.find("exited before the capture"), std::string::npos)
        << Named(results, name)->detail;
  }
}

TEST(BuiltinCollectors, TheUsersReadsAreChargedToTheirOwnBudget) {
  testing::TempDir dir;
  const std::string log = dir.Write("train.log", "step 1\nstep 2\n");
  Result<std::shared_ptr<const collect::Redactor>> redactor = collect::Redactor::Create();
  ASSERT_TRUE(redactor.ok());
  CaptureRequest request;
  request.incident.id = "i-1";
  request.pids = {::getpid()};  // the job's process: this test's, run by its user
  request.log_files = {log};
  request.watched_dirs = {dir.path().string()};
  config::CaptureConfig config;
  config.habana_logs = dir.PathOf("no-habana-logs");
  collect::RedactionCounts redactions;
  auto run = [&] {
    return RunBuiltinCollectors(request, config, dir.path().string(), **redactor, redactions,
                                "/proc");
  };

  CollectorResults results = run();
  ASSERT_NE(Named(results, "log_tails"), nullptr);
  EXPECT_EQ(Named(results, "log_tails")->status, CollectorStatus::kOk);
  ASSERT_EQ(Named(results, "log_tails")->artifacts.size(), 1u);
  EXPECT_EQ(Named(results, "log_tails")->artifacts[0].source_file, log);
  EXPECT_EQ(Named(results, "disk_usage")->status, CollectorStatus::kOk);
  EXPECT_NE(Named(results, "python_packages"), nullptr);

  std::vector<std::string> fifos;
  const DeadlineBudget user = UserDeadlineBudget(::getuid());
  for (std::size_t i = 0; i < user.cap(); ++i) {
    fifos.push_back(dir.PathOf("fifo" + std::to_string(i)));
    ASSERT_EQ(::mkfifo(fifos.back().c_str(), 0600), 0);
    std::string why;
    EXPECT_FALSE(
        CallWithDeadline<CollectorResult>(BlockingCollector(fifos.back()), 1ms, user, why));
  }
  const auto started = std::chrono::steady_clock::now();
  results = run();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 1s);
  for (const char* name : {"python_packages", "disk_usage", "log_tails"}) {
    ASSERT_NE(Named(results, name), nullptr) << name;
    EXPECT_EQ(Named(results, name)->status, CollectorStatus::kSkipped) << name;
    EXPECT_NE(Named(results, name)->detail.find("not tried"), std::string::npos)
        << Named(results, name)->detail;
  }
  EXPECT_EQ(Named(results, "incident")->status, CollectorStatus::kOk);
  EXPECT_NE(Named(results, "processes"), nullptr);
  for (const std::string& fifo : fifos) {
    testing::ReleaseFifoReader(fifo);
  }
  EXPECT_TRUE(NoneStuck());
}

}  // namespace
}  // namespace trainwatch::capture
