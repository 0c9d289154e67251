// Hang forensics on a real job: a gloo job whose last rank sleeps while the others block in
// all_reduce, watched by the real daemon; its hang bundle must hold every rank's stacks, the
// groups and the sleeping rank as the suspect. With the stack tools absent, the bundle says
// which ones and still lands. Skipped with a message where PyTorch is not installed.
#include <gtest/gtest.h>
#include <re2/re2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "integration/daemon_fixture.h"
#include "support/file_text.h"
#include "support/run_binary.h"

namespace trainwatch::testing {
namespace {

namespace fs = std::filesystem;

bool OnPath(const std::string& tool) {
  return std::system(("command -v " + tool + " > /dev/null 2>&1").c_str()) == 0;
}

class RankStacksTest : public DaemonTest {
 protected:
  void SetUp() override {
    if (!HavePyTorch()) {
      GTEST_SKIP() << kNoPyTorch;
    }
  }
  // The first bundle record of incidents.jsonl, once there.
  Json WaitForBundle() { return WaitForBundle(*daemon_); }
  Json WaitForBundle(DaemonProcess& daemon) {
    Json found;
    EXPECT_TRUE(WaitUntil(
        [&] {
          for (const Json& record : ReadRecords()) {
            if (record.contains("bundle_for")) {
              found = record;
              return true;
            }
          }
          return false;
        },
        180s))
        << daemon.Log();
    return found;
  }
  std::vector<Json> ReadRecords() const {
    std::vector<Json> records;
    std::ifstream in(state() + "/incidents.jsonl");
    std::string line;
    while (std::getline(in, line) && !in.eof()) {
      records.push_back(Json::parse(line, nullptr, false));
    }
    return records;
  }
  std::string Unpack(const std::string& bundle) const {
    std::string into = Dir("unpacked");
    fs::create_directories(into);
    const std::string command = "tar --zstd -xf '" + bundle + "' -C '" + into + "'";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    return into;
  }
};

TEST_F(RankStacksTest, AHangBundleHoldsEveryRanksStacksAndNamesTheSleepingRank) {
  const bool gdb = OnPath("gdb");
  const bool py_bt = fs::exists("/usr/share/gdb/auto-load/usr/bin/python3.11-gdb.py");
  WriteConfig({.capture = "capture: {commands: [], habana_logs: none}\n"});
  StartDaemon();
  JobProcess job(JobScript("gloo_ranks.py"), {"--mode", "stall", "--stall-at", "5", "--ranks", "4"},
                 Dir("logs/ranks.log"));
  const Json record = WaitForBundle();
  ASSERT_TRUE(record["bundle"].is_string()) << record.dump(1) << daemon_->Log();
  const std::string root = Unpack(record["bundle"]);
  const Json manifest = Json::parse(ReadFile(root + "/manifest.json"));
  const Json& ranks = manifest["ranks"];
  ASSERT_EQ(ranks["ranks"].size(), 4u) << ranks.dump(1);
  // The rest landed first, as an early bundle the complete one replaced under its name.
  EXPECT_FALSE(manifest.contains("early")) << "the complete bundle";
  if (gdb) {  // eu-stack alone may be done before the in-process collectors
    ASSERT_TRUE(record.contains("firing_to_early_bundle_seconds")) << record.dump(1);
    EXPECT_LT(record["firing_to_early_bundle_seconds"].get<double>(),
              record["firing_to_bundle_seconds"].get<double>());
    EXPECT_NE(daemon_->Log().find("early bundle"), std::string::npos);
  }
  // `trainwatch status` shows the running job's ranks.
  // (Its ranks come from /proc on the pool, busy with the capture's collectors: a status that
  // could not wait for them shows the ones read last, none the first time.)
  Json status;
  ASSERT_TRUE(WaitUntil(
      [&] {
        status = daemon_->Status(state());
        return status["ranks"].size() == 4u;
      },
      10s))
      << status.dump(1);
  EXPECT_EQ(status["ranks"][3]["label"], "rank 3");
  const RunResult printed = RunBinary({TrainwatchBinary(), "status", "--config", config()});
  EXPECT_NE(printed.out.find("rank 3: pid " + std::to_string(status["ranks"][3]["pid"].get<int>())),
            std::string::npos)
      << printed.out << printed.err;
  for (int rank = 0; rank < 4; ++rank) {
    const Json& entry = ranks["ranks"][rank];
    EXPECT_EQ(entry["rank"], rank);
    EXPECT_EQ(entry["rank_source"], "spawn order");
    const std::string folder = root + "/ranks/" + std::to_string(rank);
    EXPECT_TRUE(fs::exists(folder + "/cmdline.txt"));
    EXPECT_TRUE(fs::exists(folder + "/cpu.txt"));
    if (OnPath("eu-stack")) {
      EXPECT_EQ(entry["native_route"], "eu-stack") << entry.dump(1);
    }
    if (gdb && py_bt) {
      EXPECT_EQ(entry["python_route"], "gdb") << entry.dump(1);
      EXPECT_NE(ReadFile(folder + "/gdb.txt").find("gloo_ranks.py"), std::string::npos);
      RecordProperty("paused_seconds_rank" + std::to_string(rank),
                     std::to_string(entry["paused_seconds"].get<double>()));
    }
  }
  if (!gdb || !py_bt) {
    GTEST_SKIP() << "gdb or python3.11-dbg is not installed: no Python stacks to group "
                    "(apt-get install gdb python3.11-dbg elfutils)";
  }
  // Ranks 0-2 wait in all_reduce; rank 3 sleeps: the one suspect, in the bundle, the record
  // and the log.
  ASSERT_EQ(ranks["suspects"].size(), 1u) << ranks.dump(1);
  EXPECT_EQ(ranks["suspects"][0]["rank"], 3);
  EXPECT_NE(ranks["summary"].get<std::string>().find("ranks 0-2: all_reduce at gloo_ranks.py:"),
            std::string::npos)
      << ranks.dump(1);
  ASSERT_EQ(record["suspects"].size(), 1u) << record.dump(1);
  EXPECT_EQ(record["suspects"][0]["rank"], 3);
  // Caught in time.sleep or between two sleeps: in its loop in gloo_ranks.py either way.
  const std::string reason = record["suspects"][0]["reason"];
  EXPECT_EQ(reason.rfind("not inside a collective (", 0), 0u) << reason;
  EXPECT_NE(reason.find("gloo_ranks.py:"), std::string::npos) << reason;
  EXPECT_NE(reason.find("while ranks 0-2 wait in all_reduce at gloo_ranks.py:"), std::string::npos)
      << reason;
  EXPECT_NE(ReadFile(root + "/ranks/summary.txt").find("rank 3 (pid "), std::string::npos);
  EXPECT_NE(daemon_->Log().find("suspect rank 3 (pid"), std::string::npos) << daemon_->Log();

  // The page people look at: `trainwatch report` gives the bundle's own; a real browser draws
  // the verdict, one lane per rank and the suspect's highlighted; a terminal reads it as text.
  const std::string page = root + "/report.html";
  ASSERT_TRUE(fs::exists(page));
  const RunResult reported =
      RunBinary({TrainwatchBinary(), "report", record["bundle_for"].get<std::string>(), "--dir",
                 fs::path(record["bundle"].get<std::string>()).parent_path().string(), "--out",
                 Dir("report.html")});
  ASSERT_EQ(reported.exit_code, 0) << reported.err;
  EXPECT_EQ(ReadFile(Dir("report.html")), ReadFile(page));
  if (!OnPath("chromium") || !OnPath("w3m")) {
    GTEST_SKIP() << "chromium or w3m is not installed: report.html not checked in a browser "
                    "(apt-get install chromium w3m)";
  }
  const std::string url = "file://" + page;
  const RunResult dom =
      RunBinary({"/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
                 "--user-data-dir=" + Dir("chromium"), "--dump-dom", url},
                "", 120s);
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  std::ofstream(Dir("dom.html")) << dom.out;
  const RunResult checked =
      RunBinary({"/usr/bin/python3",
                 std::string(TRAINWATCH_TEST_SOURCE_DIR) + "/integration/report_dom_check.py",
                 manifest["incident"]["cause"].get<std::string>(), "4", "rank 3"},
                Dir("dom.html"));
  EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err;
  const std::string shot = Dir("report.png");
  const RunResult screenshot = RunBinary({"/usr/bin/chromium", "--headless", "--no-sandbox",
                                          "--disable-gpu", "--user-data-dir=" + Dir("chromium"),
                                          "--window-size=1000,1400", "--screenshot=" + shot, url},
                                         "", 120s);
  EXPECT_EQ(screenshot.exit_code, 0) << screenshot.err;
  EXPECT_GT(fs::exists(shot) ? fs::file_size(shot) : 0, 10000u) << "a page drawn, not blank";
  if (const char* keep = std::getenv("TRAINWATCH_KEEP_REPORT");
      keep != nullptr && fs::exists(shot)) {
    fs::copy_file(shot, keep, fs::copy_options::overwrite_existing);  // to look at it
    fs::copy_file(page, std::string(keep) + ".html", fs::copy_options::overwrite_existing);
  }
  const RunResult text = RunBinary({"/usr/bin/w3m", "-dump", "-T", "text/html", page});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Cause: " + manifest["incident"]["cause"].get<std::string>()),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("rank 3 (pid "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("not inside a collective"), std::string::npos) << text.out;
}

TEST_F(RankStacksTest, AWrappedJobsStacksComeFromThePythonHookWithoutADebugger) {
  WriteConfig({.capture = "capture: {commands: [], habana_logs: none}\n"});
  // A GPU busy in both samples (the fake nvidia-smi): the stall may be a long step.
  const std::string fakes = std::string(TRAINWATCH_TEST_SOURCE_DIR) + "/integration/fakes";
  DaemonProcess wrap(
      {"wrap", "--config", config(), "--", "/usr/bin/python3", JobScript("gloo_ranks.py"), "--mode",
       "stall", "--stall-at", "5"},
      Dir("wrap.out"),
      {"PATH=" + fakes + ":" + std::getenv("PATH"), "TW_FAKE_GPU_UTILIZATION=0, 100\\n1, 99"});
  const Json record = WaitForBundle(wrap);
  ASSERT_TRUE(record["bundle"].is_string()) << record.dump(1) << wrap.Log();
  const std::string root = Unpack(record["bundle"]);
  const Json manifest = Json::parse(ReadFile(root + "/manifest.json"));
  const Json& ranks = manifest["ranks"];
  ASSERT_EQ(ranks["ranks"].size(), 2u) << ranks.dump(1);
  for (const Json& entry : ranks["ranks"]) {
    EXPECT_EQ(entry["python_route"], "faulthandler") << entry.dump(1);
    // No debugger held it: at most eu-stack's moment.
    EXPECT_LT(entry["paused_seconds"].get<double>(), 2.0) << entry.dump(1);
  }
  EXPECT_NE(ReadFile(root + "/ranks/1/faulthandler.txt").find("in worker"), std::string::npos);
  ASSERT_EQ(record["suspects"].size(), 1u) << record.dump(1);
  EXPECT_EQ(record["suspects"][0]["rank"], 1);
  EXPECT_NE(record["suspects"][0]["reason"].get<std::string>().find(
                "while rank 0 waits in all_reduce at gloo_ranks.py:"),
            std::string::npos)
      << record.dump(1);
  EXPECT_NE(record.value("devices", "")
                .find("nvidia-smi device(s) 0, 1 at 99-100% utilisation in "
                      "both samples"),
            std::string::npos)
      << record.dump(1);
  EXPECT_EQ(ranks["devices"].size(), 2u) << ranks.dump(1);
  EXPECT_NE(wrap.Log().find("a long compile or step rather than a hang?"), std::string::npos);
  // The wrap's stacks folder goes with it.
  const std::string stacks = state() + "/stacks/wrap-" + std::to_string(wrap.pid());
  EXPECT_TRUE(fs::is_directory(stacks));
  wrap.Signal(SIGTERM);
  EXPECT_NE(wrap.Wait(30s), -1) << wrap.Log();
  EXPECT_FALSE(fs::exists(stacks)) << wrap.Log();
}

TEST_F(RankStacksTest, ACrashWhileOtherRanksLiveTakesTheSurvivorsStacksAndNamesTheDead) {
  // The product's default settle (2 s), not the fixture's 300 ms: a torch rank takes a moment
  // to exit after its traceback (seconds on a loaded machine), and the capture must come after.
  WriteConfig({.settle = "3s", .capture = "capture: {commands: [], habana_logs: none}\n"});
  StartDaemon();
  JobProcess job(JobScript("independent_ranks.py"), {"--ranks", "3", "--crash-at", "3"},
                 Dir("logs/ranks.log"));
  const Json record = WaitForBundle();
  ASSERT_TRUE(record["bundle"].is_string()) << record.dump(1) << daemon_->Log();
  const Json manifest = Json::parse(ReadFile(Unpack(record["bundle"]) + "/manifest.json"));
  EXPECT_EQ(manifest["incident"]["kind"], "crash");
  const Json& ranks = manifest["ranks"]["ranks"];
  ASSERT_EQ(ranks.size(), 3u) << manifest["ranks"].dump(1);
  for (int rank = 0; rank < 2; ++rank) {  // the survivors, in their checkpoint
    EXPECT_EQ(ranks[rank]["alive"], true) << ranks[rank].dump(1);
    EXPECT_EQ(ranks[rank]["rank_source"], "RANK");
    EXPECT_FALSE(ranks[rank]["native_route"].get<std::string>().empty()) << ranks[rank].dump(1);
  }
  EXPECT_EQ(ranks[2]["alive"], false) << ranks[2].dump(1);
  ASSERT_EQ(record["suspects"].size(), 1u) << record.dump(1);
  EXPECT_EQ(record["suspects"][0]["rank"], 2);
  // How it ended, from the kernel's process events where the daemon may hear them.
  const std::string cause = HearsExits() ? "exit code 1" : "";
  EXPECT_EQ(record["suspects"][0]["reason"],
            "exited while its peers ran on" + (cause.empty() ? "" : " (" + cause + ")"));
  EXPECT_EQ(ranks[2]["exit_cause"], cause) << ranks[2].dump(1);
  EXPECT_EQ(record["ranks"].get<std::string>().find("ranks 0, 1: "), 0u) << record.dump(1);
}

TEST_F(RankStacksTest, ASnapshotStopsNoRankUnlessAskedAndThenShowsItsNativeStack) {
  if (!OnPath("eu-stack")) {
    GTEST_SKIP() << "eu-stack is not installed (apt-get install elfutils)";
  }
  // A C call that blocks for good: pause(2) through ctypes, as a driver call that never
  // returns would.
  std::ofstream(Dir("stuck_native.py")) << "import ctypes\n"
                                        << "open('" << Dir("ready") << "', 'w').close()\n"
                                        << "ctypes.CDLL(None).pause()\n";
  const JobProcess stuck(Dir("stuck_native.py"), {}, Dir("stuck.out"));
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(Dir("ready")); }, 30s))
      << ReadFile(Dir("stuck.out"));
  std::ofstream(Dir("snapshot.yaml"))
      << "state_dir: " << state() << "\n"
      << "capture: {commands: [], habana_logs: none, process_pattern: 'stuck_native\\.py'}\n";
  // A snapshot stops no rank unless asked: no eu-stack, no gdb, and the bundle says why.
  fs::create_directories(Dir("gentle"));
  const RunResult gentle = RunBinary(
      {TrainwatchBinary(), "snapshot", "--config", Dir("snapshot.yaml"), "--out", Dir("gentle")});
  ASSERT_EQ(gentle.exit_code, 0) << gentle.out << gentle.err;
  const Json untouched = Json::parse(
      ReadFile(Unpack(fs::directory_iterator(Dir("gentle"))->path().string()) + "/manifest.json"));
  ASSERT_EQ(untouched["ranks"]["ranks"].size(), 1u) << untouched["ranks"].dump(1);
  const Json& untouched_rank = untouched["ranks"]["ranks"][0];
  EXPECT_EQ(untouched_rank.value("native_route", "?"), "") << untouched_rank.dump(1);
  EXPECT_EQ(untouched_rank.value("python_route", "?"), "") << untouched_rank.dump(1);
  EXPECT_EQ(untouched_rank.value("paused_seconds", -1.0), 0.0) << untouched_rank.dump(1);
  EXPECT_NE(untouched_rank["route_notes"].dump().find("runs it only with --stacks"),
            std::string::npos)
      << untouched_rank.dump(1);
  EXPECT_NE(untouched["ranks"].dump().find("no rank was stopped"), std::string::npos)
      << untouched["ranks"].dump(1);
  // --stacks asks for them.
  fs::create_directories(Dir("out"));
  const RunResult run = RunBinary({TrainwatchBinary(), "snapshot", "--stacks", "--config",
                                   Dir("snapshot.yaml"), "--out", Dir("out")});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const std::string root = Unpack(fs::directory_iterator(Dir("out"))->path().string());
  const Json manifest = Json::parse(ReadFile(root + "/manifest.json"));
  ASSERT_EQ(manifest["ranks"]["ranks"].size(), 1u) << manifest["ranks"].dump(1);
  const Json& entry = manifest["ranks"]["ranks"][0];
  EXPECT_EQ(entry["native_route"], "eu-stack") << entry.dump(1);
  const std::string native =
      ReadFile(root + "/" + entry["folder"].get<std::string>() + "/eu-stack.txt");
  EXPECT_NE(native.find("pause"), std::string::npos) << native;
}

TEST_F(RankStacksTest, ASnapshotPokesTheFlightRecorderAndBundlesItsDump) {
  fs::create_directories(Dir("fr"));
  JobProcess rank(JobScript("flight_recorder_rank.py"), {Dir("fr")}, Dir("fr/rank.out"));
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(Dir("fr/pipe_0.pipe")); }, 30s))
      << ReadFile(Dir("fr/rank.out"));
  std::ofstream(Dir("snapshot.yaml")) << "state_dir: " << state() << "\n"
                                      << "capture: {commands: [], habana_logs: none, "
                                         "process_pattern: 'flight_recorder_rank\\.py'}\n";
  fs::create_directories(Dir("out"));
  const RunResult run = RunBinary(
      {TrainwatchBinary(), "snapshot", "--config", Dir("snapshot.yaml"), "--out", Dir("out")});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  std::string bundle;
  for (const auto& entry : fs::directory_iterator(Dir("out"))) {
    bundle = entry.path().string();
  }
  const std::string root = Unpack(bundle);
  const Json manifest = Json::parse(ReadFile(root + "/manifest.json"));
  ASSERT_EQ(manifest["ranks"]["ranks"].size(), 1u) << manifest["ranks"].dump(1);
  const Json& entry = manifest["ranks"]["ranks"][0];
  EXPECT_EQ(entry["flight_recorder"]["file"], "ranks/0/flight-recorder.pickle") << entry.dump(1);
  // The dump as the rank wrote it, byte for byte (a pickle is not redacted).
  EXPECT_EQ(ReadFile(root + "/ranks/0/flight-recorder.pickle"), ReadFile(Dir("fr/trace_0")));
  EXPECT_NE(ReadFile(root + "/ranks/0/flight-recorder.pickle").find("nccl:all_reduce"),
            std::string::npos);
}

// Issue 31, item 2: a job that runs on, slower, because its last rank became a straggler: it
// spins 40 ms more each step (busy), sleeps them (a starved data loader), or is put under a
// CPU quota of 10% (quota: every rank spins 15 ms a step; a throttled device's analogue),
// while its peers wait for it in all_reduce. The slow incident's capture stops no rank; the
// wait states it samples name the straggler.
class StragglerTest : public RankStacksTest, public ::testing::WithParamInterface<const char*> {
 protected:
  void TearDown() override {
    if (!cgroup_.empty()) {
      job_.reset();  // its processes gone, the group can go
      for (int i = 0; i < 50 && ::rmdir(cgroup_.c_str()) != 0; ++i) {
        std::this_thread::sleep_for(100ms);
      }
    }
  }
  // A CPU cgroup of `percent` of one CPU for `pid` (cgroup v1's cpu controller, or v2's
  // cpu.max); false with why when neither can be made.
  bool Throttle(int pid, int percent, std::string& why) {
    const bool v2 = fs::exists("/sys/fs/cgroup/cgroup.controllers");
    cgroup_ = (v2 ? std::string("/sys/fs/cgroup/") : std::string("/sys/fs/cgroup/cpu/")) +
              "trainwatch-test-" + std::to_string(::getpid());
    if (::mkdir(cgroup_.c_str(), 0755) != 0) {
      why = "cannot make " + cgroup_ + ": " + std::strerror(errno);
      cgroup_.clear();
      return false;
    }
    const std::string quota = std::to_string(percent * 1000);
    const bool set =
        v2 ? static_cast<bool>(std::ofstream(cgroup_ + "/cpu.max") << quota << " 100000\n")
           : static_cast<bool>(std::ofstream(cgroup_ + "/cpu.cfs_quota_us") << quota << "\n");
    std::ofstream procs(cgroup_ + "/cgroup.procs");
    procs << pid << "\n";
    procs.flush();
    if (!set || !procs) {
      why = "cannot set the quota of " + cgroup_;
      return false;
    }
    return true;
  }
  std::string cgroup_;
  std::unique_ptr<JobProcess> job_;
};

INSTANTIATE_TEST_SUITE_P(Modes, StragglerTest, ::testing::Values("busy", "sleep", "quota"),
                         [](const ::testing::TestParamInfo<const char*>& mode) {
                           return std::string(mode.param);
                         });

TEST_P(StragglerTest, ASlowIncidentNamesItByItsWaitsAndStopsNoRank) {
  const std::string mode = GetParam();
  WriteConfig({.settle = "500ms",
               .extra_rules = "  - id: test.slow\n"
                              "    kind: slow\n"
                              "    tags: [train]\n"
                              "    description: 1.5 times slower over 3s than over the 6s before\n"
                              "    pace: {slower_by: 1.5, for: 3s, baseline: 6s}\n",
               .capture = "capture: {commands: [], habana_logs: none}\n"});
  StartDaemon();
  std::vector<std::string> args = {"--mode", mode, "--steady", "10", "--seconds", "40"};
  if (mode == "quota") {
    args.insert(args.end(), {"--busy-ms", "15"});
  }
  const auto started = std::chrono::steady_clock::now();
  job_ = std::make_unique<JobProcess>(JobScript("straggler.py"), args, Dir("logs/ranks.log"));
  if (mode == "quota") {
    static const RE2 kPid(R"(rank 2: process group ready .*, pid (\d+))");
    int pid = 0;
    ASSERT_TRUE(WaitUntil(
        [&] { return RE2::PartialMatch(ReadFile(Dir("logs/ranks.log")), kPid, &pid); }, 60s))
        << ReadFile(Dir("logs/ranks.log"));
    std::this_thread::sleep_until(started + 12s);  // past the 6 s baseline at full pace
    std::string why;
    if (!Throttle(pid, 10, why)) {
      GTEST_SKIP() << why;
    }
  }
  const Json record = WaitForBundle();
  ASSERT_TRUE(record["bundle"].is_string()) << record.dump(1) << daemon_->Log();
  const std::vector<Json> incidents = ReadIncidents(state());
  ASSERT_FALSE(incidents.empty());
  EXPECT_EQ(incidents[0]["kind"], "slow") << incidents[0].dump(1);
  EXPECT_EQ(incidents[0]["id"], record["bundle_for"]);
  ASSERT_EQ(record["suspects"].size(), 1u) << record.dump(1);
  EXPECT_EQ(record["suspects"][0]["rank"], 2) << record.dump(1);
  const std::string reason = record["suspects"][0]["reason"];
  EXPECT_NE(reason.find("waits for its peers least (futex"), std::string::npos) << record.dump(1);
  const Json manifest = Json::parse(ReadFile(Unpack(record["bundle"]) + "/manifest.json"));
  ASSERT_EQ(manifest["ranks"]["ranks"].size(), 3u) << manifest["ranks"].dump(1);
  for (const Json& rank : manifest["ranks"]["ranks"]) {
    EXPECT_EQ(rank["paused_seconds"], 0) << rank.dump(1);
    EXPECT_FALSE(rank["waits"].empty()) << rank.dump(1);
  }
}

TEST_F(RankStacksTest, WithoutTheStackToolsTheBundleNamesThemAndStillLands) {
  // A PATH holding none of py-spy, gdb and eu-stack.
  fs::create_directories(Dir("empty-bin"));
  WriteConfig({.capture = "capture: {commands: [], habana_logs: none}\n"});
  StartDaemon({"PATH=" + Dir("empty-bin")});
  JobProcess job(JobScript("gloo_ranks.py"), {"--mode", "stall", "--stall-at", "5"},
                 Dir("logs/ranks.log"));
  const Json record = WaitForBundle();
  ASSERT_TRUE(record["bundle"].is_string()) << record.dump(1) << daemon_->Log();
  const std::string root = Unpack(record["bundle"]);
  const Json manifest = Json::parse(ReadFile(root + "/manifest.json"));
  ASSERT_EQ(manifest["ranks"]["ranks"].size(), 2u) << manifest["ranks"].dump(1);
  const std::string notes = manifest["ranks"]["ranks"][1]["route_notes"].dump();
  for (const char* tool : {"eu-stack", "py-spy", "gdb"}) {
    EXPECT_NE(notes.find(std::string(tool) + " is not installed here"), std::string::npos) << notes;
  }
  bool listed = false;
  for (const Json& collector : manifest["collectors"]) {
    if (collector["name"] == "ranks") {
      listed = true;
      EXPECT_EQ(collector["status"], "failed") << collector.dump();
      EXPECT_NE(collector["detail"].get<std::string>().find("gdb is not installed here"),
                std::string::npos)
          << collector.dump();
    }
  }
  EXPECT_TRUE(listed);
  EXPECT_TRUE(fs::exists(root + "/ranks/1/environ.txt"));
  EXPECT_TRUE(fs::exists(root + "/incident/incident.json"));
}

}  // namespace
}  // namespace trainwatch::testing
