// The real daemon on real files: incidents from a live file, settle and cooldown, control
// socket commands, SIGHUP with a broken and a good config, SIGTERM, sd_notify, config checks.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <csignal>
#include <fstream>
#include <thread>

#include "core/unique_fd.h"
#include "integration/daemon_fixture.h"
#include "support/file_text.h"
#include "support/notify_socket.h"
#include "support/run_binary.h"

namespace trainwatch::testing {
namespace {

const char* kTraceback =
    "Traceback (most recent call last):\n"
    "  File \"train.py\", line 9, in <module>\n"
    "    main()\n"
    "RuntimeError: CUDA error: an illegal memory access was encountered\n";

TEST_F(DaemonTest, EightRanksPrintingOneTracebackMakeOneIncident) {
  WriteConfig({.settle = "1s"});
  StartDaemon();
  for (int rank = 0; rank < 8; ++rank) {
    std::filesystem::create_directories(Dir("logs/rank" + std::to_string(rank)));
    Append(Dir("logs/rank" + std::to_string(rank) + "/train.log"),
           "step 1 loss 0.5\n" + std::string(kTraceback));
  }
  ASSERT_TRUE(WaitUntil([&] { return !ReadIncidents(state()).empty(); }, 10s)) << daemon_->Log();
  std::this_thread::sleep_for(1500ms);  // nothing more may come
  const std::vector<Json> incidents = ReadIncidents(state());
  ASSERT_EQ(incidents.size(), 1u) << daemon_->Log();
  const Json& incident = incidents[0];
  EXPECT_EQ(incident["kind"], "crash");
  EXPECT_EQ(incident["summary"],
            "RuntimeError: CUDA error: an illegal memory access was encountered");
  std::set<std::string> streams;
  for (const Json& firing : incident["firings"]) {
    if (firing["rule"] == "python.traceback") {
      streams.insert(firing["stream"].get<std::string>());
      EXPECT_EQ(firing["line"], 2);
      EXPECT_EQ(firing["context"], Json::array({"step 1 loss 0.5"}));
    }
  }
  EXPECT_EQ(streams.size(), 8u) << incident.dump(1);
}

TEST_F(DaemonTest, CooldownKeepsARepeatingRuleToOneIncident) {
  WriteConfig({.settle = "200ms", .cooldown = "1h"});
  StartDaemon();
  const std::string log = Dir("logs/job.log");
  Append(log, "MARK 1 FIRE\n");
  ASSERT_TRUE(WaitUntil([&] { return IncidentsOf("test.marker").size() == 1; }, 10s));
  Append(log, "MARK 2 FIRE\nMARK 3 FIRE\nMARK 4 FIRE\n");
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(IncidentsOf("test.marker").size(), 1u) << daemon_->Log();
  // Logged once, then counted: a flood of one rule is not a flood of log lines.
  const std::string log_text = daemon_->Log();
  EXPECT_NE(log_text.find("in cooldown"), std::string::npos) << log_text;
  EXPECT_EQ(log_text.find("in cooldown"), log_text.rfind("in cooldown")) << log_text;
  EXPECT_EQ(daemon_->Status(state())["firings_without_incident"]["test.marker"], 3);
}

TEST_F(DaemonTest, TheSameApplicationFailureThreeTimesAcrossARestartSaysCancelRetries) {
  WriteConfig({.settle = "200ms",
               .cooldown = "0s",
               .extra_rules = "  - id: test.oops\n"
                              "    kind: crash\n"
                              "    cause: application\n"
                              "    action: inspect\n"
                              "    tags: [train]\n"
                              "    description: The job's own error\n"
                              "    pattern: 'OOPS at item \\d+'\n"
                              "    examples: {fires: ['OOPS at item 1'], quiet: ['ok']}\n"});
  StartDaemon();
  const std::string log = Dir("logs/job.log");
  Append(log, "[rank1]: OOPS at item 10\n");
  ASSERT_TRUE(WaitUntil([&] { return IncidentsOf("test.oops").size() == 1; }, 10s))
      << daemon_->Log();
  Append(log, "[rank3]: OOPS at item 12\n");
  ASSERT_TRUE(WaitUntil([&] { return IncidentsOf("test.oops").size() == 2; }, 10s))
      << daemon_->Log();
  daemon_->Signal(SIGTERM);
  ASSERT_EQ(daemon_->Wait(10s), 0);
  StartDaemon();
  Append(log, "[rank0]: OOPS at item 7\n");
  ASSERT_TRUE(WaitUntil([&] { return IncidentsOf("test.oops").size() == 3; }, 10s))
      << daemon_->Log();
  const std::vector<Json> incidents = IncidentsOf("test.oops");
  EXPECT_EQ(incidents[0]["action"], "inspect");
  EXPECT_EQ(incidents[2]["fingerprint"], incidents[0]["fingerprint"]);
  EXPECT_EQ(incidents[2]["recurrence"]["count"], 3) << incidents[2].dump(1);
  EXPECT_EQ(incidents[2]["recurrence"]["first"], incidents[0]["opened"]);
  EXPECT_EQ(incidents[2]["action"], "cancel_retries");
  EXPECT_NE(daemon_->Log().find("the 3rd time since "), std::string::npos) << daemon_->Log();
  // The record reads back without a daemon.
  daemon_->Signal(SIGTERM);
  ASSERT_EQ(daemon_->Wait(10s), 0);
  const RunResult listed =
      RunBinary({TrainwatchBinary(), "incidents", "list", "--config", config()});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("cause application, action cancel_retries; seen 3 times since "),
            std::string::npos)
      << listed.out;
  const RunResult shown = RunBinary({TrainwatchBinary(), "incidents", "show", "--config", config(),
                                     incidents[2]["id"].get<std::string>()});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("fingerprint " + incidents[2]["fingerprint"].get<std::string>()),
            std::string::npos)
      << shown.out;
}

TEST_F(DaemonTest, StatusAndSnapshotGoThroughThePrivateControlSocket) {
  WriteConfig({.capture = "capture: {commands: [], habana_logs: none}\n"});
  StartDaemon();
  Append(Dir("logs/job.log"), "Epoch 0:  50%|#####     | 5/10 [00:01<00:01,  4.00it/s]\n");
  ASSERT_TRUE(WaitUntil(
      [&] {
        const Json status = daemon_->Status(state());
        return !status.is_null() && !status["sources"][0]["files"].empty() &&
               status["sources"][0]["files"][0]["lines"] == 1;
      },
      10s));
  struct stat info {};
  ASSERT_EQ(::stat((state() + "/control.sock").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);

  const RunResult text = RunBinary({TrainwatchBinary(), "status", "--config", config()}, "", 30s);
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find(Dir("logs/job.log") + "  offset 56, 1 lines"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("bar 'Epoch 0' 5/10"), std::string::npos) << text.out;

  const RunResult json =
      RunBinary({TrainwatchBinary(), "status", "--json", "--config", config()}, "", 30s);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const Json status = Json::parse(json.out);
  EXPECT_EQ(status["sources"][0]["files"][0]["bars"][0]["total"], 10);

  const RunResult snapshot = RunBinary(
      {TrainwatchBinary(), "snapshot", "--reason", "checking by hand", "--config", config()}, "",
      30s);
  EXPECT_EQ(snapshot.exit_code, 0) << snapshot.err;
  const std::vector<Json> incidents = ReadIncidents(state());
  ASSERT_EQ(incidents.size(), 1u);
  EXPECT_EQ(incidents[0]["reason"], "checking by hand");
  EXPECT_NE(snapshot.out.find(incidents[0]["id"].get<std::string>()), std::string::npos);
  // It answers once the bundle is written, and names it.
  EXPECT_NE(snapshot.out.find("bundle " + state() + "/bundles/"), std::string::npos)
      << snapshot.out;
  // One kind everywhere: the record, the log, the bundle list (and the hooks and metrics,
  // which were "manual" already).
  EXPECT_EQ(incidents[0]["kind"], "manual");
  EXPECT_NE(daemon_->Log().find(": manual — "), std::string::npos) << daemon_->Log();
  const RunResult list =
      RunBinary({TrainwatchBinary(), "bundles", "list", "--config", config()}, "", 30s);
  EXPECT_NE(list.out.find("  manual  "), std::string::npos) << list.out;
}

TEST_F(DaemonTest, PollModeSeesGrowthWithinThePollInterval) {
  // No inotify, and the rescan (which would also notice growth) far away: only the 200 ms
  // uv_fs_poll of the file can see the marker in time.
  WriteConfig({.settle = "100ms", .watch_mode = "poll", .rescan = "1m"});
  const std::string log = Dir("logs/job.log");
  Append(log, "warming up\n");
  StartDaemon();
  ASSERT_NE(daemon_->Log().find("following"), std::string::npos) << daemon_->Log();
  std::this_thread::sleep_for(1500ms);  // past the first tick's sweep
  Append(log, "MARK 3 FIRE\n");
  const auto written = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitUntil([&] { return IncidentsOf("test.marker").size() == 1; }, 5s))
      << daemon_->Log();
  EXPECT_LT(std::chrono::steady_clock::now() - written, 1500ms);
  EXPECT_EQ(IncidentsOf("test.marker")[0]["firings"][0]["line"], 2);
}

TEST_F(DaemonTest, ABarInALogOfThePastIsNoHangUntilTheLogGrowsAgain) {
  WriteConfig({});
  // A job that stopped while the daemon was away left its bar at 5/10.
  const std::string log = Dir("logs/old.log");
  Append(log, "Epoch 0:  50%|#####     | 5/10 [00:05<00:05,  1.00it/s]\n");
  StartDaemon();
  std::this_thread::sleep_for(5s);  // stall_after (3 s) and more
  EXPECT_TRUE(IncidentsOf("test.stall").empty()) << daemon_->Log();
  // Written now, while watched, by a writer that keeps the log open as a job does: a live
  // bar, which then stalls. (A writer that closed it and left no holder would be gone, its
  // job over: IN_CLOSE_WRITE.)
  std::ofstream live(log, std::ios::app);
  live << "Epoch 0:  60%|######    | 6/10 [00:06<00:04,  1.00it/s]\n" << std::flush;
  ASSERT_TRUE(WaitUntil([&] { return !IncidentsOf("test.stall").empty(); }, 10s)) << daemon_->Log();
  EXPECT_EQ(IncidentsOf("test.stall")[0]["firings"][0]["line"], 2);
}

TEST_F(DaemonTest, StatusWithoutADaemonSaysSo) {
  WriteConfig({});
  const RunResult result = RunBinary({TrainwatchBinary(), "status", "--config", config()}, "", 30s);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("no trainwatch daemon answers"), std::string::npos) << result.err;
}

TEST_F(DaemonTest, ABrokenConfigOnSighupIsRejectedAndTheOldOneKeepsWorking) {
  WriteConfig({});
  StartDaemon();
  const std::string log = Dir("logs/job.log");
  Append(log, "warming up\n");
  ASSERT_TRUE(
      WaitUntil([&] { return daemon_->Log().find("following") != std::string::npos; }, 10s));

  std::ofstream(config()) << "state_dir: state\nsources:\n  - name: train\n    tags: train]\n";
  daemon_->Signal(SIGHUP);
  ASSERT_TRUE(
      WaitUntil([&] { return daemon_->Log().find("reload rejected") != std::string::npos; }, 10s));
  EXPECT_NE(daemon_->Log().find("trainwatch.yaml:4:"), std::string::npos) << daemon_->Log();

  Append(log, "MARK 7 FIRE\n");
  ASSERT_TRUE(WaitUntil([&] { return IncidentsOf("test.marker").size() == 1; }, 10s))
      << daemon_->Log();
  EXPECT_EQ(IncidentsOf("test.marker")[0]["firings"][0]["line"], 2);  // offsets were kept

  // A rule whose own example does not fire is refused too, naming the example's file and line.
  WriteConfig({.extra_rules =
                   "  - id: test.untested\n    kind: crash\n    tags: [train]\n"
                   "    description: its example misses\n    pattern: 'UNTESTED'\n"
                   "    examples: {fires: ['untested, lower case'], quiet: ['nothing']}\n"});
  daemon_->Signal(SIGHUP);
  ASSERT_TRUE(WaitUntil(
      [&] { return daemon_->Log().find("example(s) did not behave") != std::string::npos; }, 10s))
      << daemon_->Log();
  EXPECT_NE(daemon_->Log().find("trainwatch.yaml:"), std::string::npos) << daemon_->Log();
  const RunResult checked = RunBinary({TrainwatchBinary(), "check", "--config", config()}, "", 60s);
  EXPECT_EQ(checked.exit_code, 2) << checked.out;
  EXPECT_NE(checked.err.find("1 rule example did not behave"), std::string::npos) << checked.err;
  EXPECT_EQ(daemon_->Log().find("reloaded:"), std::string::npos) << daemon_->Log();

  // A good config with a new rule, sent with several SIGHUPs in a row: the last one counts.
  WriteConfig({.extra_rules = "  - id: test.new\n    kind: crash\n    tags: [train]\n"
                              "    description: added by the reload\n    pattern: 'NEW RULE'\n"
                              "    examples: {fires: ['NEW RULE'], quiet: ['old rule']}\n"});
  for (int i = 0; i < 3; ++i) {
    daemon_->Signal(SIGHUP);
  }
  ASSERT_TRUE(
      WaitUntil([&] { return daemon_->Log().find("reloaded:") != std::string::npos; }, 10s));
  std::this_thread::sleep_for(500ms);
  Append(log, "NEW RULE\n");
  ASSERT_TRUE(WaitUntil([&] { return IncidentsOf("test.new").size() == 1; }, 10s))
      << daemon_->Log();
  EXPECT_EQ(IncidentsOf("test.new")[0]["firings"][0]["line"], 3);
  daemon_->Signal(SIGTERM);
  EXPECT_EQ(daemon_->Wait(5s), 0);
}

// `trainwatch reload` (the unit's ExecReload=) answers with the daemon's verdict, so that
// `systemctl reload` fails on what the daemon refused (a SIGHUP is only logged).
TEST_F(DaemonTest, ReloadWaitsForTheVerdictAndFailsOnWhatTheDaemonRefused) {
  WriteConfig({});
  StartDaemon();
  auto reload = [&] {
    return RunBinary({TrainwatchBinary(), "reload", "--config", config()}, "", 60s);
  };
  const RunResult good = reload();
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_NE(good.out.find("reloaded: 2 sources, "), std::string::npos) << good.out;

  // Refused by the daemon: a rule whose example misses.
  WriteConfig({.extra_rules =
                   "  - id: test.untested\n    kind: crash\n    tags: [train]\n"
                   "    description: its example misses\n    pattern: 'UNTESTED'\n"
                   "    examples: {fires: ['untested, lower case'], quiet: ['nothing']}\n"});
  const RunResult refused = reload();
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_NE(refused.err.find("reload rejected, still running on the previous config"),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("test-rules.yaml:25:24: rule 'test.untested'"), std::string::npos)
      << refused.err;

  // Refused before asking: the config itself does not parse.
  std::ofstream(config()) << "state_dir: state\nsources:\n  - name: train\n    tags: train]\n";
  const RunResult broken = reload();
  EXPECT_EQ(broken.exit_code, 1) << broken.out;
  EXPECT_NE(broken.err.find("trainwatch.yaml:4:"), std::string::npos) << broken.err;
  EXPECT_FALSE(daemon_->Status(state()).is_null()) << daemon_->Log();
  EXPECT_EQ(daemon_->Log().find("reloaded: "), daemon_->Log().rfind("reloaded: "))
      << daemon_->Log();
}

TEST_F(DaemonTest, SigtermSavesOffsetsAndExitsCleanlyWithinTwoSeconds) {
  WriteConfig({});
  StartDaemon();
  Append(Dir("logs/job.log"), "one\ntwo\nthree (unfinished");
  ASSERT_TRUE(WaitUntil(
      [&] {
        const Json status = daemon_->Status(state());
        return !status.is_null() && !status["sources"][0]["files"].empty() &&
               status["sources"][0]["files"][0]["lines"] == 2;
      },
      10s));
  const auto start = std::chrono::steady_clock::now();
  daemon_->Signal(SIGTERM);
  EXPECT_EQ(daemon_->Wait(5s), 0) << daemon_->Log();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(daemon_->Log().find("did not close cleanly"), std::string::npos) << daemon_->Log();
  EXPECT_FALSE(std::filesystem::exists(state() + "/control.sock"));
  std::ifstream in(state() + "/offsets.json");
  const Json offsets = Json::parse(in);
  ASSERT_EQ(offsets["tails"].size(), 1u);
  EXPECT_EQ(offsets["tails"][0]["offset"], 8);  // after "two\n": the unfinished line is re-read
  EXPECT_EQ(offsets["tails"][0]["next_line"], 3);
}

TEST_F(DaemonTest, ASecondDaemonOnTheSameStateDirRefusesToStart) {
  WriteConfig({});
  StartDaemon();
  DaemonProcess second({"daemon", "--config", config()}, Dir("second.log"));
  EXPECT_EQ(second.Wait(10s), 2);
  EXPECT_NE(second.Log().find("another trainwatch daemon uses state_dir"), std::string::npos)
      << second.Log();
}

TEST_F(DaemonTest, WrapBesideARunningDaemonRunsItsCommandAndSharesTheIncidentLog) {
  WriteConfig({.settle = "100ms"});
  StartDaemon();
  DaemonProcess wrap(
      {"wrap", "--config", config(), "--", "/bin/sh", "-c", "echo 'MARK 5 FIRE'; exit 4"},
      Dir("wrap.out"));
  EXPECT_EQ(wrap.Wait(20s), 4) << wrap.Log();
  EXPECT_NE(wrap.Log().find("already watches state_dir"), std::string::npos) << wrap.Log();
  const std::vector<Json> incidents = IncidentsOf("test.marker");
  ASSERT_EQ(incidents.size(), 1u) << wrap.Log();
  EXPECT_EQ(incidents[0]["firings"][0]["stream"], "wrap:stdout");
  EXPECT_TRUE(daemon_->running());  // and its socket is still its own
  EXPECT_FALSE(daemon_->Status(state()).is_null());
}

// `wrap --exit-codes verdict`: a failed command exits by its failure's verdict, for a
// scheduler's requeue policy; one that succeeded exits 0.
TEST_F(DaemonTest, WrapsVerdictExitCodes) {
  // A short settle time: the ECC line's incident is often written before the command's exit
  // comes (it was, twice in full runs on a loaded machine), and the exit, the end of the
  // device error the command printed, must not open an incident of its own and win the
  // verdict (91 instead of 92).
  WriteConfig({.settle = "100ms", .cooldown = "0s"});
  struct Case {
    const char* script;
    int own;
    int expected;
  };
  const Case cases[] = {
      {"echo 'MARK 5 FIRE'; exit 4", 4, 90},  // test.marker: application, cancel_retries
      {"echo 'RuntimeError: CUDA error: uncorrectable ECC error encountered'; exit 1", 1, 92},
      // Only the exit rule says anything: cause unknown, worth another attempt.
      {"echo fine; exit 3", 3, 91},
      {"echo 'MARK 6 FIRE'; exit 0", 0, 0},
  };
  for (const Case& c : cases) {
    std::filesystem::remove_all(state());
    DaemonProcess wrap(
        {"wrap", "--config", config(), "--exit-codes", "verdict", "--", "/bin/sh", "-c", c.script},
        Dir("wrap.out"));
    EXPECT_EQ(wrap.Wait(30s), c.expected) << c.script << "\n" << wrap.Log();
  }
}

// A reload of a wrap beside the daemon keeps the sources the host daemon's: both following
// them would record every line's incident twice.
TEST_F(DaemonTest, AReloadOfAWrapBesideTheDaemonLeavesTheSourcesToIt) {
  WriteConfig({.settle = "100ms"});
  StartDaemon();
  DaemonProcess wrap({"wrap", "--config", config(), "--", "/bin/sleep", "30"}, Dir("wrap.out"));
  ASSERT_TRUE(WaitUntil(
      [&] { return wrap.Log().find("already watches state_dir") != std::string::npos; }, 20s))
      << wrap.Log();
  wrap.Signal(SIGHUP);
  ASSERT_TRUE(WaitUntil([&] { return wrap.Log().find("reloaded:") != std::string::npos; }, 30s))
      << wrap.Log();
  EXPECT_NE(wrap.Log().find("reloaded: 0 sources"), std::string::npos) << wrap.Log();
  std::ofstream(Dir("logs/job.log"), std::ios::app) << "MARK 7 FIRE\n";
  ASSERT_TRUE(WaitUntil([&] { return !IncidentsOf("test.marker").empty(); }, 20s))
      << daemon_->Log();
  std::this_thread::sleep_for(1500ms);  // a second follower would have fired by now
  EXPECT_EQ(IncidentsOf("test.marker").size(), 1u) << wrap.Log();
  wrap.Signal(SIGTERM);
  wrap.Wait(20s);
}

TEST_F(DaemonTest, NotifiesSystemdReadyStatusAndWatchdog) {
  WriteConfig({});
  const std::string socket_path = Dir("notify.sock");
  NotifySocket notify(socket_path);
  ASSERT_TRUE(notify.bound());
  StartDaemon({"NOTIFY_SOCKET=" + socket_path, "WATCHDOG_USEC=400000"});
  WaitUntil([&] { return notify.Received("WATCHDOG=1\nWATCHDOG=1"); }, 10s);
  const std::string& messages = notify.messages();
  EXPECT_NE(messages.find("READY=1"), std::string::npos) << messages;
  EXPECT_NE(messages.find("STATUS=watching 0 files in 2 sources"), std::string::npos) << messages;
  EXPECT_NE(messages.find("WATCHDOG=1\nWATCHDOG=1"), std::string::npos) << messages;
}

TEST_F(DaemonTest, CheckConfigReportsEveryProblemWithFileLineAndColumn) {
  WriteConfig({});
  const RunResult good = RunBinary({TrainwatchBinary(), "check", "--config", config()}, "", 60s);
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_NE(good.out.find("ok: 2 sources"), std::string::npos) << good.out;

  std::ofstream(config()) << "state_dir: state\n"
                             "incident: {settle: 2 seconds}\n"
                             "sources:\n"
                             "  - name: train\n"
                             "    tags: [train]\n"
                             "    path: [logs/*.log]\n";
  const RunResult bad = RunBinary({TrainwatchBinary(), "check", "--config", config()}, "", 60s);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("trainwatch.yaml:2:"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("trainwatch.yaml:6:5"), std::string::npos) << bad.err;

  const RunResult daemon = RunBinary({TrainwatchBinary(), "daemon", "--config", config()}, "", 60s);
  EXPECT_EQ(daemon.exit_code, 2);
  EXPECT_NE(daemon.err.find("trainwatch.yaml:6:5"), std::string::npos) << daemon.err;
}

TEST_F(DaemonTest, AStateDirTooLongForTheControlSocketIsAClearError) {
  std::ofstream(config()) << "state_dir: " << std::string(120, 's') << "\n";
  const RunResult result = RunBinary({TrainwatchBinary(), "daemon", "--config", config()}, "", 30s);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("too long for a unix socket"), std::string::npos) << result.err;
}

TEST_F(DaemonTest, TheShippedDefaultConfigIsValid) {
  const RunResult result =
      RunBinary({TrainwatchBinary(), "check", "--config",
                 std::string(TRAINWATCH_TEST_SOURCE_DIR) + "/../daemon/trainwatch.yaml"},
                "", 60s);
  EXPECT_EQ(result.exit_code, 0) << result.err;
}

}  // namespace
}  // namespace trainwatch::testing

namespace trainwatch::testing {
namespace {

// The daemon with a kernel source whose /dev/kmsg is a FIFO: the same record format, one
// record per write.
class KmsgDaemonTest : public DaemonTest {
 protected:
  // Starts it; the FIFO's writing end is `writer_`.
  void StartOnKmsgFifo() {
    WriteConfig({});
    std::ofstream(config(), std::ios::app)
        << "  - name: kernel\n    tags: [kmsg]\n    kmsg: true\n";
    const std::string device = Dir("kmsg");
    ASSERT_EQ(::mkfifo(device.c_str(), 0600), 0);
    daemon_ = std::make_unique<DaemonProcess>(
        std::vector<std::string>{"daemon", "--config", config(), "--kmsg-device", device},
        Dir("daemon.log"));
    ASSERT_TRUE(daemon_->WaitReady(state())) << daemon_->Log();
    writer_ = UniqueFd(::open(device.c_str(), O_WRONLY | O_CLOEXEC));
    ASSERT_GE(writer_.get(), 0);
  }
  UniqueFd writer_;
};

TEST_F(KmsgDaemonTest, KernelMessagesComeAsDmesgLinesForTheKmsgRules) {
  ASSERT_NO_FATAL_FAILURE(StartOnKmsgFifo());
  const std::string record =
      "3,1234,5123456789,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=python3, GPU has "
      "fallen off the bus.\n SUBSYSTEM=pci\n";
  ASSERT_EQ(::write(writer_.get(), record.data(), record.size()),
            static_cast<ssize_t>(record.size()));
  ASSERT_TRUE(WaitUntil([&] { return !ReadIncidents(state()).empty(); }, 10s)) << daemon_->Log();
  const Json incident = ReadIncidents(state())[0];
  EXPECT_EQ(incident["kind"], "device") << incident.dump(1);
  EXPECT_EQ(incident["firings"][0]["stream"], "kmsg");
  EXPECT_EQ(incident["firings"][0]["text"],
            "[ 5123.456789] NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=python3, GPU has "
            "fallen off the bus.");
}

TEST_F(DaemonTest, AnUnreadableKernelLogIsReportedOnceAndTheRestWorks) {
  WriteConfig({});
  std::ofstream(config(), std::ios::app) << "  - name: kernel\n    tags: [kmsg]\n    kmsg: true\n";
  daemon_ = std::make_unique<DaemonProcess>(
      std::vector<std::string>{"daemon", "--config", config(), "--kmsg-device",
                               Dir("no-such-kmsg")},
      Dir("daemon.log"));
  ASSERT_TRUE(daemon_->WaitReady(state())) << daemon_->Log();
  Append(Dir("logs/job.log"), "MARK 1 FIRE\n");
  ASSERT_TRUE(WaitUntil([&] { return IncidentsOf("test.marker").size() == 1; }, 10s));
  const std::string log = daemon_->Log();
  EXPECT_NE(log.find("kmsg: cannot read " + Dir("no-such-kmsg")), std::string::npos) << log;
  EXPECT_EQ(log.find("kmsg: cannot read"), log.rfind("kmsg: cannot read"));
  // ...and the daemon says it is blind there (the watcher's health).
  const Json health = daemon_->Status(state())["health"];
  EXPECT_EQ(health["watching"], false) << health.dump(1);
  // (A loaded machine may add loop_slow: only the kernel log's is asserted.)
  bool kmsg_blind = false;
  for (const Json& spot : health["blind"]) {
    kmsg_blind = kmsg_blind || (spot["reason"] == "kmsg_not_read" && spot["what"] == "kernel");
  }
  EXPECT_TRUE(kmsg_blind) << health.dump(1);
}

// The kernel's "nfs: server X not responding" is a storage hang, open until the kernel says
// that server is OK again; another server's OK leaves it open.
TEST_F(KmsgDaemonTest, AnNfsServerNotRespondingIsAHangUntilTheSameServerIsOk) {
  ASSERT_NO_FATAL_FAILURE(StartOnKmsgFifo());
  auto say = [&](const std::string& record) {
    ASSERT_EQ(::write(writer_.get(), record.data(), record.size()),
              static_cast<ssize_t>(record.size()));
  };
  say("4,2001,1219453411386,-;nfs: server fs01 not responding, still trying\n");
  ASSERT_TRUE(WaitUntil([&] { return !ReadIncidents(state()).empty(); }, 10s)) << daemon_->Log();
  const Json incident = ReadIncidents(state())[0];
  EXPECT_EQ(incident["kind"], "hang") << incident.dump(1);
  EXPECT_EQ(incident["cause"], "infrastructure");
  EXPECT_EQ(incident["rules"], Json::array({"storage.nfs_not_responding"}));
  const std::string id = incident["id"];
  auto resolution = [&] {
    const RunResult shown =
        RunBinary({TrainwatchBinary(), "incidents", "show", id, "--json", "--config", config()});
    const Json record = Json::parse(shown.out, nullptr, false);
    return record.is_object() && record.contains("resolved") ? record["resolved"] : Json();
  };
  // One record per read, as /dev/kmsg gives them: each written once the last was read.
  auto kernel_lines = [&] {
    const Json status = daemon_->Status(state());
    for (const Json& source : status.value("sources", Json::array())) {
      if (source.value("name", "") == "kernel") {
        return source.value("lines", 0);
      }
    }
    return 0;
  };
  ASSERT_TRUE(WaitUntil([&] { return kernel_lines() == 1; }, 10s));
  say("4,2002,1219460000000,-;nfs: server fs02 OK\n");
  ASSERT_TRUE(WaitUntil([&] { return kernel_lines() == 2; }, 10s));
  // fs01's own OK comes after fs02's: once it has resolved the incident, fs02's had not.
  say("4,2003,1219499101010,-;nfs: server fs01 OK\n");
  ASSERT_TRUE(WaitUntil([&] { return !resolution().is_null(); }, 10s)) << daemon_->Log();
  const Json resolved = resolution();
  EXPECT_EQ(resolved["how"], "line") << resolved.dump(1);
  EXPECT_NE(resolved["why"].get<std::string>().find("nfs: server fs01 OK"), std::string::npos)
      << resolved.dump(1);
  EXPECT_EQ(ReadIncidents(state()).size(), 1U) << "the OK lines open nothing";
}

}  // namespace
}  // namespace trainwatch::testing
