// Real PyTorch training jobs (Debian's python3-torch, run with /usr/bin/python3) that crash,
// hang or go quiet, watched by the real daemon through their log files. Skipped with a
// message where PyTorch is not installed.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include "integration/daemon_fixture.h"
#include "support/file_text.h"
#include "support/run_binary.h"

namespace trainwatch::testing {
namespace {

class JobTest : public DaemonTest {
 protected:
  void SetUp() override {
    if (!HavePyTorch()) {
      GTEST_SKIP() << kNoPyTorch;
    }
  }
  static std::uint64_t Size(const std::string& path) {
    struct stat info {};
    return ::stat(path.c_str(), &info) == 0 ? static_cast<std::uint64_t>(info.st_size) : 0;
  }
  // Watches `log` until `rule` opened an incident (or `timeout`): when the log last grew, in
  // milliseconds since the epoch (polled every 50 ms); -1 on timeout.
  std::int64_t LastGrowthBeforeIncidentOf(const std::string& log, const std::string& rule,
                                          std::chrono::seconds timeout) {
    std::uint64_t size = 0;
    auto last_growth = std::chrono::system_clock::now();
    const bool found = WaitUntil(
        [&] {
          if (const std::uint64_t now = Size(log); now != size) {
            size = now;
            last_growth = std::chrono::system_clock::now();
          }
          return !IncidentsOf(rule).empty();
        },
        timeout);
    return found ? std::chrono::duration_cast<std::chrono::milliseconds>(
                       last_growth.time_since_epoch())
                       .count()
                 : -1;
  }
};

std::int64_t MillisOf(const Json& iso_time_ms) { return iso_time_ms.get<std::int64_t>(); }

TEST_F(JobTest, ATrainingJobThatRaisesMakesOneIncidentNamedByItsException) {
  WriteConfig({.settle = "1s"});
  StartDaemon();
  JobProcess job(JobScript("crash_after_training.py"), {"--steps", "20"}, Dir("logs/job.log"));
  EXPECT_EQ(job.Wait(60s), 1);
  ASSERT_TRUE(WaitUntil([&] { return !ReadIncidents(state()).empty(); }, 10s)) << daemon_->Log();
  std::this_thread::sleep_for(1500ms);
  const std::vector<Json> incidents = ReadIncidents(state());
  ASSERT_EQ(incidents.size(), 1u) << daemon_->Log();
  EXPECT_EQ(incidents[0]["kind"], "crash");
  EXPECT_EQ(incidents[0]["summary"],
            "RuntimeError: mat1 and mat2 shapes cannot be multiplied (32x12 and 16x4)");
  // The job's own bar finished: no stall, and its writer's exit is no crash of its own.
  for (const Json& rule : incidents[0]["rules"]) {
    EXPECT_NE(rule, "test.stall");
  }
  ExpectScanGivesTheSameAnswer(incidents[0], {Dir("logs/job.log")});
}

TEST_F(JobTest, ACrashLoopMakesAnIncidentPerCrashAndTheThirdSaysStop) {
  WriteConfig({.settle = "1s"});  // the cooldown is a minute: the restart must end it
  StartDaemon();
  const std::string log = Dir("logs/job.log");
  const std::vector<std::string> args = {"--steps", "40", "--step-seconds", "0.1"};
  {
    JobProcess job(JobScript("crash_after_training.py"), args, log);
    EXPECT_EQ(job.Wait(60s), 1);
  }
  ASSERT_TRUE(WaitUntil([&] { return ReadIncidents(state()).size() == 1; }, 10s)) << daemon_->Log();
  const std::string first = ReadIncidents(state())[0]["id"];
  // The launcher runs it again, into the same log: a new process, none of the old ones.
  JobProcess again(JobScript("crash_after_training.py"), args, log);
  EXPECT_EQ(again.Wait(60s), 1);
  ASSERT_TRUE(WaitUntil([&] { return ReadIncidents(state()).size() == 2; }, 10s)) << daemon_->Log();
  {
    JobProcess third(JobScript("crash_after_training.py"), args, log);
    EXPECT_EQ(third.Wait(60s), 1);
  }
  ASSERT_TRUE(WaitUntil([&] { return ReadIncidents(state()).size() == 3; }, 10s)) << daemon_->Log();
  const std::vector<Json> incidents = ReadIncidents(state());
  EXPECT_EQ(incidents[1]["recurrence"]["count"], 2) << incidents[1].dump(1);
  // The same application error a third time: retrying will not help.
  EXPECT_EQ(incidents[2]["recurrence"]["count"], 3) << incidents[2].dump(1);
  EXPECT_EQ(incidents[2]["cause"], "application");
  EXPECT_EQ(incidents[2]["action"], "cancel_retries") << incidents[2].dump(1);
  EXPECT_EQ(incidents[2]["fingerprint"], incidents[0]["fingerprint"]);
  const RunResult shown =
      RunBinary({TrainwatchBinary(), "incidents", "show", first, "--json", "--config", config()});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const Json record = Json::parse(shown.out);
  ASSERT_TRUE(record.contains("resolved")) << record.dump(1) << daemon_->Log();
  EXPECT_EQ(record["resolved"]["how"], "restart");
  EXPECT_NE(record["resolved"]["why"].get<std::string>().find(
                "is written by pid " + std::to_string(again.pid()) + " (python3)"),
            std::string::npos)
      << record.dump(1);
}

TEST_F(JobTest, AFastJobThatStopsIsFlaggedByTheThresholdItsOwnPaceTaught) {
  // 4 x the p99 of 0.25 s steps is 1 s, floored at 2 s: long before the 10 min cap.
  WriteConfig({.extra_rules = "  - id: test.learnt\n"
                              "    kind: hang\n"
                              "    tags: [train]\n"
                              "    description: A stall learnt from the job's pace\n"
                              "    progress: {stall_after: 10m, startup_grace: 10m, factor: 4, "
                              "min: 2s}\n"});
  StartDaemon();
  const std::string log = Dir("logs/job.log");
  JobProcess job(JobScript("go_silent.py"),
                 {"--steps", "20", "--step-seconds", "0.25", "--log", log}, Dir("job.out"));
  const std::int64_t stalled_at = LastGrowthBeforeIncidentOf(log, "test.learnt", 90s);
  ASSERT_NE(stalled_at, -1) << daemon_->Log();
  const Json incident = IncidentsOf("test.learnt")[0];
  const Json* firing = nullptr;
  for (const Json& candidate : incident["firings"]) {
    if (candidate["rule"] == "test.learnt") {
      firing = &candidate;
    }
  }
  ASSERT_NE(firing, nullptr) << incident.dump(1);
  EXPECT_NE((*firing)["summary"].get<std::string>().find("(learnt: 4 x its p99 interval "),
            std::string::npos)
      << firing->dump(1);
  EXPECT_LT(incident["opened_ms"].get<long long>() - stalled_at, 15000) << incident.dump(1);
  // Its pace is in `status`.
  const Json bars = daemon_->Status(state())["sources"][0]["files"][0]["bars"];
  ASSERT_FALSE(bars.empty()) << bars.dump(1);
  EXPECT_GT(bars[0].value("interval_p99_seconds", 0.0), 0.2) << bars.dump(1);
  const RunResult printed = RunBinary({TrainwatchBinary(), "status", "--config", config()});
  EXPECT_NE(printed.out.find(", pace p99 0."), std::string::npos) << printed.out;
}

TEST_F(JobTest, AStallThatRecoversIsResolvedAndTheNextStallIsANewIncident) {
  WriteConfig({.settle = "1s"});  // the cooldown is a minute: longer than the whole job
  StartDaemon();
  const std::string log = Dir("logs/job.log");
  // Steps of 0.25 s; before step 12 a pause of 8 s, past test.stall's 3 s; after step 29 the
  // job goes silent for good. Its environment names its job, as a pod spec would.
  ::setenv("TRAINWATCH_JOB_ID", "stall-job-1", 1);
  JobProcess job(JobScript("go_silent.py"),
                 {"--steps", "30", "--step-seconds", "0.25", "--pause-at", "12", "--pause-seconds",
                  "8", "--log", log},
                 Dir("job.out"));
  ::unsetenv("TRAINWATCH_JOB_ID");
  ASSERT_TRUE(WaitUntil([&] { return IncidentsOf("test.stall").size() >= 2; }, 90s))
      << daemon_->Log();
  const std::vector<Json> stalls = IncidentsOf("test.stall");
  EXPECT_EQ(stalls[0]["job"]["id"], "stall-job-1") << stalls[0].dump(1);
  EXPECT_EQ(stalls[0]["job"]["id_from"], "TRAINWATCH_JOB_ID");
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  EXPECT_EQ(stalls[0]["job"]["node"], host);
  EXPECT_NE(stalls[0]["firings"][0]["summary"].get<std::string>().find("at 11 has not advanced"),
            std::string::npos)
      << stalls[0].dump(1);
  EXPECT_NE(stalls[1]["firings"][0]["summary"].get<std::string>().find("at 29 has not advanced"),
            std::string::npos)
      << stalls[1].dump(1);

  // The first resolved when the steps came again, in the log and in `incidents list`; the
  // second is open, in status and the metrics, until an operator acknowledges it.
  const RunResult listed =
      RunBinary({TrainwatchBinary(), "incidents", "list", "--json", "--config", config()});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const Json records = Json::parse(listed.out);
  const Json* first = nullptr;
  for (const Json& record : records) {
    if (record["id"] == stalls[0]["id"]) {
      first = &record;
    }
  }
  ASSERT_NE(first, nullptr) << listed.out;
  ASSERT_TRUE(first->contains("resolved")) << first->dump(1) << daemon_->Log();
  EXPECT_EQ((*first)["resolved"]["how"], "progress");
  EXPECT_EQ((*first)["resolved"]["why"].get<std::string>().rfind("progress resumed on " + log, 0),
            0U)
      << first->dump(1);
  const std::string second = stalls[1]["id"];
  const Json status = daemon_->Status(state());
  EXPECT_EQ(status["job"]["id"], "stall-job-1") << status["job"].dump(1);  // the running job's
  Json open = status["open_incidents"];
  ASSERT_EQ(open.size(), 1U) << open.dump(1);
  EXPECT_EQ(open[0]["id"], second);

  const RunResult acked = RunBinary({TrainwatchBinary(), "incidents", "ack", second, "--why",
                                     "job cancelled", "--config", config()});
  ASSERT_EQ(acked.exit_code, 0) << acked.err;
  EXPECT_NE(acked.out.find("recorded by the daemon"), std::string::npos) << acked.out;
  EXPECT_TRUE(daemon_->Status(state())["open_incidents"].empty());
  EXPECT_NE(daemon_->Log().find("incident " + second + " resolved ("), std::string::npos)
      << daemon_->Log();
}

TEST_F(JobTest, TwoGlooRanksWhereOneSleepsForeverAreAProgressStall) {
  WriteConfig({});
  StartDaemon();
  const std::string log = Dir("logs/ranks.log");
  JobProcess job(JobScript("gloo_ranks.py"), {"--mode", "stall", "--stall-at", "10"}, log);
  // The bar stops when rank 1 stops; from then on the log does not grow.
  const std::int64_t stalled_at = LastGrowthBeforeIncidentOf(log, "test.stall", 60s);
  ASSERT_NE(stalled_at, -1) << daemon_->Log();
  const Json incident = IncidentsOf("test.stall")[0];
  EXPECT_EQ(incident["kind"], "hang");
  const Json& firing = incident["firings"][0];
  EXPECT_NE(firing["summary"].get<std::string>().find("'Epoch 0' at 10/40 has not advanced"),
            std::string::npos)
      << firing.dump(1);
  // stall_after is 3 s; the detector must say so within 2 s of that deadline (the file was
  // polled every 50 ms here, so growth is known to that precision).
  EXPECT_LE(MillisOf(incident["opened_ms"]) - stalled_at, 3000 + 2000 + 50);
  EXPECT_GE(MillisOf(incident["opened_ms"]) - stalled_at, 3000 - 100);
  EXPECT_TRUE(IncidentsOf("writer.exited").empty());
}

TEST_F(JobTest, AShortGlooTimeoutFiresTheTimeoutRule) {
  WriteConfig({.settle = "1s"});
  StartDaemon();
  // 1 s, not 3: a 3 s gloo timeout races the test pack's 3 s stall of the frozen bar on a
  // loaded machine.
  JobProcess job(JobScript("gloo_ranks.py"), {"--mode", "timeout", "--timeout-seconds", "1"},
                 Dir("logs/ranks.log"));
  EXPECT_EQ(job.Wait(60s), 1);
  ASSERT_TRUE(WaitUntil([&] { return !IncidentsOf("pytorch.gloo.error").empty(); }, 10s))
      << daemon_->Log();
  const Json incident = IncidentsOf("pytorch.gloo.error")[0];
  EXPECT_EQ(incident["kind"], "crash");
  EXPECT_NE(incident["summary"].get<std::string>().find("Timed out waiting 1000ms"),
            std::string::npos)
      << incident.dump(1);
}

// A real job whose loss turns NaN at step 5 and trains on: one `diverged` incident, with the
// step it began at and the last finite loss, and `scan` of the same log says the same. An fp16
// overflow step the loss scaler skips (step 2) counts for nothing.
TEST_F(JobTest, ALossThatStaysNanIsADivergedIncidentAndScanSaysTheSame) {
  WriteConfig({.settle = "1s"});
  StartDaemon();
  JobProcess job(JobScript("loss_goes_nan.py"), {"--nan-at", "5", "--overflow-at", "2"},
                 Dir("logs/train.log"));
  EXPECT_EQ(job.Wait(60s), 0);
  ASSERT_TRUE(WaitUntil([&] { return !IncidentsOf("training.loss_stays_nan").empty(); }, 20s))
      << daemon_->Log() << ReadFile(Dir("logs/train.log"));
  std::this_thread::sleep_for(2s);  // a second incident, if one came, would be written by now
  const std::vector<Json> incidents = ReadIncidents(state());
  ASSERT_EQ(incidents.size(), 1u) << daemon_->Log();
  const Json& incident = incidents[0];
  EXPECT_EQ(incident["kind"], "diverged") << incident.dump(1);
  EXPECT_EQ(incident["cause"], "application");
  EXPECT_EQ(incident["action"], "cancel_retries");
  const std::string summary = incident.value("summary", "");
  EXPECT_NE(summary.find("loss is nan on 3 lines in a row since step 5 (line "), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("; the last finite loss was "), std::string::npos) << summary;
  EXPECT_NE(summary.find(" at step 4"), std::string::npos) << summary;
  // The log replayed: the same rule, line and summary.
  const RunResult scan =
      RunBinary({TrainwatchBinary(), "scan", "--rules", TRAINWATCH_TEST_RULES_DIR, "--tag", "train",
                 "--format", "jsonl", Dir("logs/train.log")});
  EXPECT_EQ(scan.exit_code, 1) << scan.err;
  const Json event = Json::parse(scan.out.substr(0, scan.out.find('\n')), nullptr, false);
  ASSERT_TRUE(event.is_object()) << scan.out;
  EXPECT_EQ(event["rule"], "training.loss_stays_nan") << scan.out;
  EXPECT_EQ(event["kind"], "diverged");
  EXPECT_EQ(event.value("summary", ""), summary) << scan.out;
  ExpectScanGivesTheSameAnswer(incident, {Dir("logs/train.log")});
  // `status` shows the loss the stream printed last, and how long its run of NaN is.
  const Json status = daemon_->Status(state());
  Json loss;
  for (const Json& source : status.value("sources", Json::array())) {
    for (const Json& file : source.value("files", Json::array())) {
      if (file.value("path", "") == Dir("logs/train.log")) {
        loss = file.value("loss", Json());
      }
    }
  }
  ASSERT_TRUE(loss.is_object()) << status.dump(1);
  EXPECT_EQ(loss["last"], "nan");
  EXPECT_EQ(loss["step"], 39);
  EXPECT_EQ(loss["not_finite_in_a_row"], 35);
}

TEST_F(JobTest, AJobThatGoesSilentIsASilenceIncident) {
  WriteConfig({});
  std::filesystem::create_directories(Dir("quiet"));
  StartDaemon();
  // The job opens its log once torch is imported: an import slowed past the 3 s silence by
  // a loaded machine must not be what the test sees.
  JobProcess job(JobScript("go_silent.py"), {"--steps", "5", "--log", Dir("quiet/job.log")},
                 Dir("quiet/stdout.txt"));
  ASSERT_TRUE(WaitUntil([&] { return !IncidentsOf("test.silence").empty(); }, 60s))
      << daemon_->Log();
  const Json incident = IncidentsOf("test.silence")[0];
  EXPECT_EQ(incident["kind"], "hang");
  EXPECT_NE(incident["summary"].get<std::string>().find("no output from source quiet"),
            std::string::npos);
  // The last lines the job printed come with it.
  const Json& context = incident["firings"][0]["context"];
  ASSERT_FALSE(context.empty()) << incident.dump(1) << "\n" << daemon_->Log();
  EXPECT_EQ(context.back(), "step 4 loss 0.9752");
}

TEST_F(JobTest, AJobKilledMidBarWithoutAWordIsAWriterExitCrash) {
  WriteConfig({});
  StartDaemon();
  JobProcess job(JobScript("oom_killed.py"), {"--kill-at", "15"}, Dir("logs/job.log"));
  EXPECT_EQ(job.Wait(60s), 128 + SIGKILL);
  ASSERT_TRUE(WaitUntil([&] { return !IncidentsOf("writer.exited").empty(); }, 10s))
      << daemon_->Log();
  const Json incident = IncidentsOf("writer.exited")[0];
  EXPECT_EQ(incident["kind"], "crash");
  EXPECT_NE(
      incident["summary"].get<std::string>().find("(python3) stopped with 'Epoch 0' at 15/40"),
      std::string::npos)
      << incident.dump(1);
  std::this_thread::sleep_for(4s);  // past stall_after: a dead job's bar is no hang
  EXPECT_TRUE(IncidentsOf("test.stall").empty()) << daemon_->Log();
}

// A rank killed while its launcher does not reap it (busy, stuck, or a container's init that
// reaps nothing) is a zombie: it holds no file and runs no more, and is gone as a writer.
TEST_F(JobTest, AKilledWriterLeftAZombieByItsLauncherIsAWriterExitCrash) {
  WriteConfig({});
  StartDaemon();
  const std::string launcher_output = Dir("launcher.txt");
  JobProcess job(JobScript("oom_killed.py"),
                 {"--kill-at", "15", "--unreaped-for", "60", "--log", Dir("logs/job.log")},
                 launcher_output);
  pid_t trainer = 0;
  ASSERT_TRUE(WaitUntil(
      [&] {
        return std::sscanf(ReadFile(launcher_output).c_str(), "launcher: trainer pid %d",
                           &trainer) == 1;
      },
      30s));
  ASSERT_TRUE(WaitUntil([&] { return !IncidentsOf("writer.exited").empty(); }, 30s))
      << daemon_->Log();
  const std::string stat = ReadFile(fmt::format("/proc/{}/stat", trainer));
  EXPECT_NE(stat.find(") Z "), std::string::npos) << "the trainer is not a zombie now: " << stat;
  const Json incident = IncidentsOf("writer.exited")[0];
  EXPECT_NE(incident["summary"].get<std::string>().find(
                fmt::format("{} (python3) stopped with 'Epoch 0' at 15/40", trainer)),
            std::string::npos)
      << incident.dump(1);
}

TEST_F(JobTest, AJobThatSegfaultsMidBarIsOneWriterExitCrash) {
  WriteConfig({});
  StartDaemon();
  JobProcess job(JobScript("oom_killed.py"), {"--kill-at", "15", "--segfault"},
                 Dir("logs/job.log"));
  EXPECT_EQ(job.Wait(60s), 128 + SIGSEGV);
  ASSERT_TRUE(WaitUntil([&] { return !ReadIncidents(state()).empty(); }, 10s)) << daemon_->Log();
  std::this_thread::sleep_for(4s);  // past stall_after: one incident, no hang after it
  const std::vector<Json> incidents = ReadIncidents(state());
  ASSERT_EQ(incidents.size(), 1u) << daemon_->Log();
  EXPECT_EQ(incidents[0]["kind"], "crash");
  EXPECT_EQ(incidents[0]["rules"], Json::array({"writer.exited"})) << incidents[0].dump(1);
}

// Wrapped: the command's end is known exactly (its status), whatever its log shows.
class WrapJobTest : public JobTest {
 protected:
  // Runs `trainwatch wrap -- python3 JOB ARGS` to its end; the incidents it recorded.
  std::vector<Json> Wrap(const std::string& job, const std::vector<std::string>& args,
                         int expected_status) {
    WriteConfig({.settle = "500ms"});
    std::ofstream(config(), std::ios::app) << "wrap: {log_file: \"logs/wrapped-{pid}.log\"}\n";
    std::vector<std::string> argv = {"wrap", "--config",         config(),
                                     "--",   "/usr/bin/python3", JobScript(job)};
    argv.insert(argv.end(), args.begin(), args.end());
    DaemonProcess wrap(argv, Dir("wrap.out"));
    EXPECT_EQ(wrap.Wait(90s), expected_status) << wrap.Log();
    log_ = wrap.Log();
    return ReadIncidents(state());
  }
  std::string log_;
};

TEST_F(WrapJobTest, ASegfaultIsOneCrashNamingTheSignal) {
  const std::vector<Json> incidents =
      Wrap("oom_killed.py", {"--kill-at", "15", "--segfault"}, 128 + SIGSEGV);
  ASSERT_EQ(incidents.size(), 1u) << log_;
  EXPECT_EQ(incidents[0]["kind"], "crash");
  EXPECT_NE(incidents[0]["summary"].get<std::string>().find("signal 11"), std::string::npos)
      << incidents[0].dump(1);
}

TEST_F(WrapJobTest, ASigkillLateInTheBarIsOneCrash) {
  const std::vector<Json> incidents = Wrap("oom_killed.py", {"--kill-at", "35"}, 128 + SIGKILL);
  ASSERT_EQ(incidents.size(), 1u) << log_;
  EXPECT_EQ(incidents[0]["kind"], "crash");
  EXPECT_NE(incidents[0]["summary"].get<std::string>().find("signal 9"), std::string::npos)
      << incidents[0].dump(1);
}

TEST_F(WrapJobTest, AGlooTimeoutIsOneCrashNamedByItsError) {
  // A gloo timeout well inside the test's 3 s stall: with both at 3 s, the stall won the race
  // on a loaded machine (a hang incident before the crash's).
  const std::vector<Json> incidents =
      Wrap("gloo_ranks.py", {"--mode", "timeout", "--timeout-seconds", "1"}, 1);
  ASSERT_EQ(incidents.size(), 1u) << log_;
  EXPECT_EQ(incidents[0]["kind"], "crash");
  EXPECT_NE(incidents[0]["summary"].get<std::string>().find("Timed out waiting 1000ms"),
            std::string::npos)
      << incidents[0].dump(1);
}

// A stall and a silence of 3 s on the train source too: a job that ended must give neither.
constexpr const char* kTrainSilence =
    "  - id: test.train_silence\n"
    "    kind: hang\n"
    "    tags: [train]\n"
    "    description: No output for 3s on the train source\n"
    "    silence: {after: 3s}\n";

// A job whose steps go from 20 to 6 a second (a straggler, a throttled device) and back: one
// slow incident naming the slowdown, capturing without stopping a rank, resolved when the
// pace came back.
constexpr const char* kTrainPace =
    "  - id: test.slow\n"
    "    kind: slow\n"
    "    tags: [train]\n"
    "    description: 1.5 times slower over 3s than over the 6s before\n"
    "    pace: {slower_by: 1.5, for: 3s, baseline: 6s}\n";

TEST_F(JobTest, AJobThatSlowsDownIsASlowIncidentResolvedWhenThePaceComesBack) {
  WriteConfig({.settle = "500ms", .extra_rules = kTrainPace});
  StartDaemon();
  JobProcess job(JobScript("slows_down.py"), {"--steady", "8", "--slow", "7", "--after", "7"},
                 Dir("logs/job.log"));
  ASSERT_TRUE(WaitUntil([&] { return !IncidentsOf("test.slow").empty(); }, 40s))
      << daemon_->Log() << ReadFile(Dir("logs/job.log"));
  const Json incident = IncidentsOf("test.slow")[0];
  EXPECT_EQ(incident["kind"], "slow") << incident.dump(1);
  const std::string summary = incident.value("summary", "");
  EXPECT_NE(summary.find("x slower over the last 3s: "), std::string::npos) << summary;
  EXPECT_EQ(job.Wait(60s), 0);
  // Resolved once the pace came back, in the log and in `incidents list`.
  const RunResult listed =
      RunBinary({TrainwatchBinary(), "incidents", "list", "--json", "--config", config()});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  bool resolved = false;
  for (const Json& record : Json::parse(listed.out)) {
    if (record["id"] == incident["id"] && record.contains("resolved")) {
      resolved = true;
      EXPECT_EQ(record["resolved"]["how"], "progress") << record.dump(1);
      EXPECT_EQ(record["resolved"]["why"].get<std::string>().rfind("the pace came back on ", 0), 0U)
          << record.dump(1);
    }
  }
  EXPECT_TRUE(resolved) << listed.out << daemon_->Log();
  // One slowdown, one incident: no stall, no second slow one.
  EXPECT_EQ(ReadIncidents(state()).size(), 1u) << daemon_->Log();
  // `status` shows the pace the rule judges: steps a second over the last minute.
  const Json status = daemon_->Status(state());
  double pace = 0;
  for (const Json& source : status.value("sources", Json::array())) {
    for (const Json& file : source.value("files", Json::array())) {
      for (const Json& bar : file.value("bars", Json::array())) {
        pace = std::max(pace, bar.value("steps_per_second", 0.0));
      }
    }
  }
  EXPECT_GT(pace, 3.0) << status.dump(1);
  // ... and the thresholds the rules hold it to.
  bool shown = false;
  for (const Json& rule : status["thresholds"]["pace"]) {
    if (rule["id"] == "test.slow") {
      shown = true;
      EXPECT_EQ(rule["slower_by"], 1.5);
      EXPECT_EQ(rule["for_seconds"], 3.0);
      EXPECT_EQ(rule["baseline_seconds"], 6.0);
    }
  }
  EXPECT_TRUE(shown) << status["thresholds"].dump(1);
  EXPECT_FALSE(status["thresholds"]["stall"].empty()) << status["thresholds"].dump(1);
}

// Issue 31, item 3: the job's own straggler report (Megatron's, printed by rank 0 each logging
// interval) with the shipped rules: three uneven reports in a row are one slow incident about
// the slow rank the report names; it resolves when a report says the ranks are even again.
TEST_F(JobTest, MegatronsStragglerReportIsASlowIncidentAboutTheRankItNames) {
  WriteConfig({.settle = "300ms"});
  StartDaemon();
  auto report = [&](double slowest, int rank) {
    Append(Dir("logs/job.log"),
           fmt::format("[rank0]: [2026-11-28 10:00:00] | MnRtt/Rnk: 2210.50ms/3 | MxRtt/Rnk: "
                       "{:.2f}ms/{} | MnPwr/Rnk: 512000W/5 | MxPwr/Rnk: 690000W/1\n",
                       slowest, rank));
    std::this_thread::sleep_for(300ms);
  };
  report(2230, 1);
  for (int i = 0; i < 4; ++i) {
    report(2950, 5);
  }
  ASSERT_TRUE(WaitUntil([&] { return !IncidentsOf("megatron.straggler").empty(); }, 20s))
      << daemon_->Log();
  const Json incident = IncidentsOf("megatron.straggler")[0];
  EXPECT_EQ(incident["kind"], "slow") << incident.dump(1);
  EXPECT_EQ(incident.value("straggler_rank", -1), 5) << incident.dump(1);
  EXPECT_FALSE(incident.contains("first_failing_rank")) << "no rank failed";
  EXPECT_EQ(incident.value("summary", ""),
            "[rank0]: rank 5 is the slowest at 1.33x the fastest (2950 against 2210.5), 3 "
            "reports in a row")
      << incident.dump(1);
  ExpectScanGivesTheSameAnswer(incident, {Dir("logs/job.log")});
  // Still uneven: open. Even again: resolved by the report.
  report(2960, 5);
  std::this_thread::sleep_for(2s);
  const auto resolution = [&] {
    const RunResult listed =
        RunBinary({TrainwatchBinary(), "incidents", "list", "--json", "--config", config()});
    for (const Json& record : Json::parse(listed.out, nullptr, false)) {
      if (record.value("id", "") == incident["id"] && record.contains("resolved")) {
        return record["resolved"];
      }
    }
    return Json();
  };
  EXPECT_TRUE(resolution().is_null()) << resolution().dump(1);
  report(2215, 2);
  Json resolved;
  ASSERT_TRUE(WaitUntil([&] { return !(resolved = resolution()).is_null(); }, 10s))
      << daemon_->Log();
  EXPECT_EQ(resolved["why"],
            "the job's report on " + Dir("logs/job.log") + " says its ranks are even again");
  EXPECT_EQ(ReadIncidents(state()).size(), 1U) << daemon_->Log();
}

TEST_F(JobTest, AJobKilledWithinASecondOfItsFirstLineIsOneCrashAndNoHang) {
  WriteConfig({.settle = "300ms", .extra_rules = kTrainSilence});
  StartDaemon();
  JobProcess job(JobScript("short_lived.py"), {"--mode", "killed", "--log", Dir("logs/job.log")},
                 Dir("stdout.txt"));
  EXPECT_EQ(job.Wait(60s), 128 + SIGKILL);
  ASSERT_TRUE(WaitUntil([&] { return !ReadIncidents(state()).empty(); }, 10s)) << daemon_->Log();
  std::this_thread::sleep_for(5s);  // past the stall and the silence (3 s each)
  const std::vector<Json> incidents = ReadIncidents(state());
  ASSERT_EQ(incidents.size(), 1u) << daemon_->Log();
  EXPECT_EQ(incidents[0]["kind"], "crash") << incidents[0].dump(1);
  EXPECT_EQ(incidents[0]["rules"], Json::array({"writer.exited"})) << incidents[0].dump(1);
  EXPECT_NE(incidents[0]["summary"].get<std::string>().find("stopped with 'Epoch 0' at "),
            std::string::npos)
      << incidents[0].dump(1);
}

TEST_F(JobTest, AJobThatEndsNormallyAfterABarWithNoTotalOrStoppedEarlyIsNoIncident) {
  WriteConfig({.settle = "300ms", .extra_rules = kTrainSilence});
  StartDaemon();
  JobProcess no_total(JobScript("short_lived.py"),
                      {"--mode", "no-total", "--log", Dir("logs/no-total.log")},
                      Dir("stdout-1.txt"));
  JobProcess early(JobScript("short_lived.py"), {"--mode", "early", "--log", Dir("logs/early.log")},
                   Dir("stdout-2.txt"));
  EXPECT_EQ(no_total.Wait(60s), 0);
  EXPECT_EQ(early.Wait(60s), 0);
  std::this_thread::sleep_for(5s);  // past the stall and the silence (3 s each)
  EXPECT_TRUE(ReadIncidents(state()).empty()) << daemon_->Log();
  // Their ends were seen and judged, not missed.
  const std::string log = daemon_->Log();
  EXPECT_NE(log.find("no-total.log exited"), std::string::npos) << log;
  EXPECT_NE(log.find("early.log exited"), std::string::npos) << log;
}

// Issue 30, item 2: a log that keeps only the exception's line (no traceback). The job that
// then exits crashed of it: one crash incident, its summary that line, its writer's exit a
// follow-up of it. The job that goes on after the same line is no incident.
TEST_F(JobTest, ABareExceptionIsACrashOnlyAsItsWritersLastWord) {
  WriteConfig({.settle = "300ms", .extra_rules = kTrainSilence});
  StartDaemon();
  JobProcess crashed(JobScript("short_lived.py"),
                     {"--mode", "bare-exception", "--log", Dir("logs/crashed.log")},
                     Dir("stdout-1.txt"));
  JobProcess survives(JobScript("short_lived.py"),
                      {"--mode", "survives", "--log", Dir("logs/survives.log")},
                      Dir("stdout-2.txt"));
  EXPECT_EQ(crashed.Wait(60s), 1);
  EXPECT_EQ(survives.Wait(60s), 0);
  ASSERT_TRUE(WaitUntil([&] { return !IncidentsOf("python.bare_exception").empty(); }, 15s))
      << daemon_->Log();
  std::this_thread::sleep_for(4s);  // past the silence (3 s)
  const std::vector<Json> incidents = ReadIncidents(state());
  ASSERT_EQ(incidents.size(), 1u) << daemon_->Log();
  EXPECT_EQ(incidents[0]["kind"], "crash");
  EXPECT_EQ(incidents[0]["summary"], "AssertionError: batch size 30 != 32") << incidents[0].dump(1);
  for (const Json& firing : incidents[0]["firings"]) {
    EXPECT_NE(firing.value("stream", ""), Dir("logs/survives.log")) << incidents[0].dump(1);
  }
  // `scan` of each log says the same.
  const RunResult scan_crashed =
      RunBinary({TrainwatchBinary(), "scan", "--rules", TRAINWATCH_TEST_RULES_DIR, "--tag", "train",
                 Dir("logs/crashed.log")});
  EXPECT_EQ(scan_crashed.exit_code, 1);
  EXPECT_NE(scan_crashed.out.find("crash python.bare_exception: AssertionError: batch size 30"),
            std::string::npos)
      << scan_crashed.out;
  ExpectScanGivesTheSameAnswer(incidents[0], {Dir("logs/crashed.log")});
  const RunResult scan_survives =
      RunBinary({TrainwatchBinary(), "scan", "--rules", TRAINWATCH_TEST_RULES_DIR, "--tag", "train",
                 Dir("logs/survives.log")});
  EXPECT_EQ(scan_survives.exit_code, 0) << scan_survives.out;
}

TEST_F(JobTest, WrapPassesOutputThroughAndExitsWithTheJobsStatus) {
  WriteConfig({.settle = "500ms"});
  std::ofstream(config(), std::ios::app) << "wrap: {log_file: \"logs/wrapped-{pid}.log\"}\n";
  DaemonProcess wrap({"wrap", "--config", config(), "--", "/usr/bin/python3",
                      JobScript("crash_after_training.py"), "--steps", "5"},
                     Dir("wrap.out"));
  EXPECT_EQ(wrap.Wait(60s), 1) << wrap.Log();
  const std::string out = wrap.Log();
  EXPECT_NE(out.find("RuntimeError: mat1 and mat2 shapes cannot be multiplied"), std::string::npos);
  const std::vector<Json> incidents = ReadIncidents(state());
  ASSERT_EQ(incidents.size(), 1u) << out;
  EXPECT_EQ(incidents[0]["summary"],
            "RuntimeError: mat1 and mat2 shapes cannot be multiplied (32x12 and 16x4)");
  // The exit status (exit.failed) joins it while it is open; after a teardown slower than
  // `settle` it is a follow-up of the crash, never an incident of its own.
  // The tee'd log has the job's output, and was not watched a second time as a file.
  std::string teed;
  for (const auto& entry : std::filesystem::directory_iterator(Dir("logs"))) {
    teed = entry.path().string();
  }
  ASSERT_NE(teed.find("wrapped-"), std::string::npos);
  for (const Json& firing : incidents[0]["firings"]) {
    EXPECT_NE(firing["stream"], teed);
    EXPECT_EQ(firing["writers"][0]["comm"], "python3") << firing.dump(1);
  }
}

}  // namespace
}  // namespace trainwatch::testing
