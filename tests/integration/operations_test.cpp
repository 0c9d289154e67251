// What operators wire the daemon into: on_incident hooks (run after the bundle, with the
// incident in their environment, killed at their timeout, failures counted and never fatal)
// and the Prometheus textfile (checked by the real `promtool check metrics` when installed).
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "integration/daemon_fixture.h"
#include "support/file_text.h"
#include "support/run_binary.h"

namespace trainwatch::testing {
namespace {

namespace fs = std::filesystem;

// The value of the sample `series` (name with labels, as printed) in textfile `text`.
std::optional<double> Sample(const std::string& text, const std::string& series) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(series + " ", 0) == 0) {
      return std::stod(line.substr(series.size() + 1));
    }
  }
  return std::nullopt;
}

bool HavePromtool() { return std::system("command -v promtool >/dev/null 2>&1") == 0; }

class OperationsTest : public DaemonTest {
 protected:
  // Bundles without the command collectors (no fakes needed), and `hooks` as on_incident.
  void WriteConfigWithHooks(const std::string& hooks) {
    WriteConfig({.capture = "capture: {commands: []}\n"
                            "metrics: {interval: 1s}\n"
                            "on_incident:\n" +
                            hooks});
  }
  std::string Metrics() const { return ReadFile(state() + "/trainwatch.prom"); }
};

TEST_F(OperationsTest, HooksRunAfterTheBundleWithTheIncidentAndFailuresAreCountedNotFatal) {
  WriteConfigWithHooks(
      "  - name: record\n"
      "    argv: [sh, -c, 'env | grep ^TRAINWATCH_ | sort > \"$0\"; test -s "
      "\"$TRAINWATCH_BUNDLE\"',"
      " " +
      Dir("hook-env.txt") +
      "]\n"
      "  - name: fails\n"
      "    argv: [sh, -c, 'echo upload refused >&2; exit 3']\n"
      "  - name: slow\n"
      "    argv: [sleep, '30']\n"
      "    timeout: 2s\n"
      "  - name: absent\n"
      "    argv: [/nonexistent/hook]\n");
  StartDaemon();
  Append(Dir("logs/job.log"), "step 1\nMARK 1 FIRE\n");
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(Dir("hook-env.txt")); }, 30s)) << daemon_->Log();
  ASSERT_TRUE(WaitUntil([&] { return !ReadFile(Dir("hook-env.txt")).empty(); }, 5s));

  const std::vector<Json> incidents = ReadIncidents(state());
  ASSERT_EQ(incidents.size(), 1u);
  const std::string env = ReadFile(Dir("hook-env.txt"));
  EXPECT_NE(env.find("TRAINWATCH_INCIDENT_ID=" + incidents[0]["id"].get<std::string>()),
            std::string::npos)
      << env;
  EXPECT_NE(env.find("TRAINWATCH_INCIDENT_KIND=crash\n"), std::string::npos) << env;
  EXPECT_NE(env.find("TRAINWATCH_INCIDENT_RULE=test.marker\n"), std::string::npos) << env;
  EXPECT_NE(env.find("TRAINWATCH_INCIDENT_SUMMARY=MARK 1 FIRE\n"), std::string::npos) << env;
  EXPECT_NE(env.find("TRAINWATCH_INCIDENT_CAUSE=application\n"), std::string::npos) << env;
  EXPECT_NE(env.find("TRAINWATCH_INCIDENT_ACTION=cancel_retries\n"), std::string::npos) << env;
  EXPECT_NE(env.find("TRAINWATCH_INCIDENT_VERDICT=test.marker (application)\n"), std::string::npos)
      << env;
  EXPECT_NE(env.find("TRAINWATCH_INCIDENT_RECURRENCE=1\n"), std::string::npos) << env;
  // Lines appended by the test itself: no job's process to name one; the node is this host.
  EXPECT_NE(env.find("TRAINWATCH_JOB_ID=\n"), std::string::npos) << env;
  EXPECT_NE(env.find("TRAINWATCH_NODE=" + incidents[0]["job"]["node"].get<std::string>() + "\n"),
            std::string::npos)
      << env;
  EXPECT_NE(env.find("TRAINWATCH_INCIDENT_FINGERPRINT=" +
                     incidents[0]["fingerprint"].get<std::string>() + "\n"),
            std::string::npos)
      << env;
  EXPECT_EQ(incidents[0]["cause"], "application");
  EXPECT_EQ(incidents[0]["action"], "cancel_retries");
  EXPECT_NE(daemon_->Log().find("cause application, action cancel_retries: test.marker"),
            std::string::npos)
      << daemon_->Log();
  EXPECT_NE(env.find("TRAINWATCH_BUNDLE=" + state() + "/bundles/"), std::string::npos) << env;
  EXPECT_NE(env.find("TRAINWATCH_INCIDENTS_FILE=" + state() + "/incidents.jsonl\n"),
            std::string::npos)
      << env;

  // While the slow hook sleeps, the loop answers at once.
  const auto asked = std::chrono::steady_clock::now();
  const RunResult status =
      RunBinary({TrainwatchBinary(), "status", "--config", config()}, "", std::chrono::seconds(5));
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 1500ms);
  EXPECT_TRUE(daemon_->running());

  // The slow one is killed at 2 s; every failure is logged and counted, the daemon goes on.
  ASSERT_TRUE(WaitUntil(
      [&] { return Sample(Metrics(), "trainwatch_hook_failures_total{hook=\"slow\"}") == 1; }, 15s))
      << Metrics() << daemon_->Log();
  const std::string metrics = Metrics();
  EXPECT_EQ(Sample(metrics, "trainwatch_hook_runs_total{hook=\"record\"}"), 1);
  EXPECT_EQ(Sample(metrics, "trainwatch_hook_failures_total{hook=\"record\"}"), 0) << metrics;
  EXPECT_EQ(Sample(metrics, "trainwatch_hook_failures_total{hook=\"fails\"}"), 1);
  EXPECT_EQ(Sample(metrics, "trainwatch_hook_failures_total{hook=\"absent\"}"), 1);
  const std::string log = daemon_->Log();
  EXPECT_NE(log.find("on_incident hook fails failed: exit status 3: upload refused"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("on_incident hook slow timed_out"), std::string::npos) << log;
  EXPECT_NE(log.find("on_incident hook absent missing"), std::string::npos) << log;
  EXPECT_TRUE(daemon_->running());
  daemon_->Signal(SIGTERM);
  EXPECT_EQ(daemon_->Wait(), 0);
}

TEST_F(OperationsTest, WrapWaitsForTheHooksBeforeItExits) {
  WriteConfigWithHooks(
      "  - name: late\n"
      "    argv: [sh, -c, 'sleep 1; echo \"$TRAINWATCH_INCIDENT_RULES\" > \"$0\"', " +
      Dir("late.txt") + "]\n");
  DaemonProcess wrap({"wrap", "--config", config(), "--", "sh", "-c", "echo 'MARK 7 FIRE'; exit 4"},
                     Dir("wrap.log"));
  EXPECT_EQ(wrap.Wait(30s), 4) << wrap.Log();
  EXPECT_NE(ReadFile(Dir("late.txt")).find("test.marker"), std::string::npos) << wrap.Log();
}

TEST_F(OperationsTest, SigtermWhileWrapWaitsForAHookKeepsTheCommandsStatus) {
  WriteConfigWithHooks("  - name: slow\n    argv: [sleep, '30']\n");
  DaemonProcess wrap({"wrap", "--config", config(), "--", "sh", "-c", "echo 'MARK 8 FIRE'; exit 4"},
                     Dir("wrap.log"));
  ASSERT_TRUE(WaitUntil(
      [&] { return wrap.Log().find("waiting for the on_incident hooks") != std::string::npos; },
      20s))
      << wrap.Log();
  wrap.Signal(SIGTERM);
  EXPECT_EQ(wrap.Wait(10s), 4) << wrap.Log();  // the crashed job's status, not 0
  EXPECT_NE(wrap.Log().find("on_incident hook slow killed: the daemon is stopping"),
            std::string::npos)
      << wrap.Log();
}

TEST_F(OperationsTest, TheMetricsFileCountsWhatTheDaemonSawAndPromtoolAcceptsIt) {
  WriteConfigWithHooks("  - name: ok\n    argv: ['true']\n");
  StartDaemon();
  Append(Dir("logs/job.log"),
         "epoch 1:  50%|#####     | 5/10 [00:05<00:05,  1.00it/s]\n"
         "MARK 1 FIRE\n"
         "MARK 2 FIRE\n");
  ASSERT_TRUE(WaitUntil(
      [&] {
        return Sample(Metrics(), "trainwatch_bundles_written_total") == 1 &&
               Sample(Metrics(), "trainwatch_hook_runs_total{hook=\"ok\"}") == 1;
      },
      30s))
      << Metrics() << daemon_->Log();
  const std::string metrics = Metrics();
  EXPECT_EQ(Sample(metrics, "trainwatch_rule_firings_total{rule=\"test.marker\"}"), 2) << metrics;
  EXPECT_EQ(Sample(metrics, "trainwatch_incidents_total{kind=\"crash\"}"), 1) << metrics;
  EXPECT_EQ(Sample(metrics,
                   "trainwatch_incidents_by_verdict_total{cause=\"application\","
                   "action=\"cancel_retries\"}"),
            1)
      << metrics;
  // Known series exist from the start at 0, so rate() sees their first increase.
  EXPECT_EQ(Sample(metrics, "trainwatch_incidents_total{kind=\"hang\"}"), 0) << metrics;
  EXPECT_EQ(Sample(metrics, "trainwatch_rule_firings_total{rule=\"test.stall\"}"), 0) << metrics;
  EXPECT_GT(Sample(metrics, "trainwatch_bundle_bytes_total").value_or(0), 0) << metrics;
  EXPECT_EQ(Sample(metrics, "trainwatch_source_lines_total{source=\"train\"}"), 3) << metrics;
  EXPECT_GT(Sample(metrics, "trainwatch_source_bytes_total{source=\"train\"}").value_or(0), 60);
  EXPECT_EQ(Sample(metrics, "trainwatch_source_files{source=\"train\"}"), 1) << metrics;
  EXPECT_NE(metrics.find("trainwatch_progress_position{source=\"train\",stream=\"" +
                         Dir("logs/job.log") + "\",bar=\""),
            std::string::npos)
      << metrics;
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const double started = Sample(metrics, "trainwatch_start_time_seconds{version=\"" +
                                             std::string(TRAINWATCH_VERSION) + "\"}")
                             .value_or(0);
  EXPECT_GT(started, now - 120) << metrics;
  EXPECT_LE(started, now);
  struct stat info {};
  ASSERT_EQ(::stat((state() + "/trainwatch.prom").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0644u);  // node_exporter runs as another user
  EXPECT_FALSE(fs::exists(state() + "/trainwatch.prom.tmp"));

  if (!HavePromtool()) {
    GTEST_SKIP() << "promtool is not installed (apt-get install prometheus): the format "
                    "was not checked by it";
  }
  const RunResult checked =
      RunBinary({"/bin/sh", "-c", "promtool check metrics"}, state() + "/trainwatch.prom");
  EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err << metrics;
}

}  // namespace
}  // namespace trainwatch::testing
