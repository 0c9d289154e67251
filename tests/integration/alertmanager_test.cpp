// Alerts through a real Alertmanager (Debian's prometheus-alertmanager) on loopback, routing to
// a webhook receiver on loopback: three nodes' incidents of one job reach the receiver as one
// notification grouped by job_id; an Alertmanager stopped and started again, and a daemon
// restarted meanwhile, lose no alert; acknowledging the incidents ends their alerts.
// Skipped with a message where Alertmanager is not installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>

#include "integration/daemon_fixture.h"
#include "support/file_text.h"
#include "support/run_binary.h"

namespace trainwatch::testing {
namespace {

namespace fs = std::filesystem;

std::string AlertmanagerBinary() {
  for (const char* path :
       {"/usr/local/bin/prometheus-alertmanager", "/usr/bin/prometheus-alertmanager"}) {
    if (::access(path, X_OK) == 0) {
      return path;
    }
  }
  return {};
}

class AlertmanagerTest : public DaemonTest {
 protected:
  void SetUp() override {
    if (AlertmanagerBinary().empty()) {
      GTEST_SKIP() << "Alertmanager is not installed (.ci/install-deps puts Debian's "
                      "prometheus-alertmanager binary in /usr/local/bin)";
    }
    am_port_ = FreeLoopbackPort();
    receiver_ = DaemonProcess::Program(
        {"/usr/bin/python3", JobScript("webhook_receiver.py"), Dir("notifications.jsonl")},
        Dir("receiver.log"));
    ASSERT_TRUE(WaitUntil([&] { return fs::exists(Dir("notifications.jsonl.port")); }, 20s));
    // The operator guide's example route, as an operator copies it: only its receiver is this
    // test's, and its waits are shorter.
    const std::string readme =
        ReadFile(std::string(TRAINWATCH_TEST_SOURCE_DIR) + "/../docs/operator-guide.md");
    const std::size_t marker = readme.find("<!-- alertmanager-route -->");
    ASSERT_NE(marker, std::string::npos) << "docs/operator-guide.md lost its example route";
    const std::size_t begin = readme.find('\n', readme.find("```yaml", marker)) + 1;
    std::string route = readme.substr(begin, readme.find("```", begin) - begin);
    for (const auto& [from, to] :
         {std::pair<std::string, std::string>{"group_wait: 30s", "group_wait: 4s"},
          {"group_interval: 5m", "group_interval: 2s"},
          {"http://chat-bridge.example:8080/alerts",
           "http://127.0.0.1:" + ReadFile(Dir("notifications.jsonl.port")) + "/"}}) {
      const std::size_t at = route.find(from);
      ASSERT_NE(at, std::string::npos) << from << " is not in the operator guide's route:\n"
                                       << route;
      route.replace(at, from.size(), to);
    }
    std::ofstream(Dir("am.yml")) << route;
  }
  void StartAlertmanager() {
    alertmanager_ = DaemonProcess::Program(
        {AlertmanagerBinary(), "--config.file=" + Dir("am.yml"), "--storage.path=" + Dir("am"),
         "--web.listen-address=127.0.0.1:" + std::to_string(am_port_),
         "--cluster.listen-address="},  // no gossip port: one instance
        Dir("alertmanager.log"));
    ASSERT_TRUE(WaitUntil(
        [&] {
          return RunBinary({"/usr/bin/python3", "-c",
                            "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:" +
                                std::to_string(am_port_) + "/-/ready', timeout=1)"})
                     .exit_code == 0;
        },
        30s))
        << alertmanager_->Log();
  }
  void StopAlertmanager() {
    alertmanager_->Signal(SIGTERM);
    alertmanager_->Wait();
  }
  // node0 is the fixture's daemon (logs/, state/); node N watches logsN/ into stateN/.
  void StartNodes() {
    WriteConfig({.cooldown = "0s",
                 .capture = "capture: {commands: [], habana_logs: none}\n"
                            "cluster: {node_name: node0, job_id: jobA}\n"
                            "alertmanager: {urls: [http://127.0.0.1:" +
                            std::to_string(am_port_) + "], resend: 10s}\n"});
    for (const std::string node : {"1", "2"}) {
      std::string text = ReadFile(config());
      for (const auto& [from, to] :
           {std::pair<std::string, std::string>{"state_dir: state", "state_dir: state" + node},
            {"logs/**/*.log", "logs" + node + "/**/*.log"},
            {"node_name: node0", "node_name: node" + node}}) {
        text.replace(text.find(from), from.size(), to);
      }
      std::ofstream(Dir("node" + node + ".yaml")) << text;
      fs::create_directories(Dir("logs" + node));
    }
    StartDaemon();
    nodes_[1] = StartNode("1");
    nodes_[2] = StartNode("2");
  }
  std::unique_ptr<DaemonProcess> StartNode(const std::string& node) {
    auto daemon = std::make_unique<DaemonProcess>(
        std::vector<std::string>{"daemon", "--config", Dir("node" + node + ".yaml")},
        Dir("node" + node + ".log"));
    EXPECT_TRUE(daemon->WaitReady(Dir("state" + node))) << daemon->Log();
    return daemon;
  }
  std::vector<Json> Notifications() const {
    std::vector<Json> out;
    std::ifstream in(Dir("notifications.jsonl"));
    std::string line;
    while (std::getline(in, line)) {
      out.push_back(Json::parse(line, nullptr, false));
    }
    return out;
  }
  // The alerts Alertmanager holds now, through its API.
  Json ActiveAlerts() const {
    const RunResult got =
        RunBinary({"/usr/bin/python3", "-c",
                   "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:" +
                       std::to_string(am_port_) +
                       "/api/v2/alerts?active=true', timeout=2).read().decode())"});
    return Json::parse(got.out, nullptr, false);
  }
  std::string IncidentOf(const std::string& state_dir, std::size_t index = 0) const {
    const std::vector<Json> incidents = ReadIncidents(state_dir);
    return incidents.size() > index ? incidents[index]["id"].get<std::string>() : "";
  }

  int am_port_ = 0;
  std::unique_ptr<DaemonProcess> receiver_;
  std::unique_ptr<DaemonProcess> alertmanager_;
  std::unique_ptr<DaemonProcess> nodes_[3];
};

TEST_F(AlertmanagerTest, ThreeNodesOneNotificationNothingLostResolutionEndsThem) {
  StartAlertmanager();
  StartNodes();
  Append(Dir("logs/job.log"), "[rank0]: MARK 1 FIRE\n");
  Append(Dir("logs1/job.log"), "[rank9]: MARK 1 FIRE\n");
  Append(Dir("logs2/job.log"), "[rank17]: MARK 1 FIRE\n");
  // One notification for the job: three alerts, grouped by job_id.
  ASSERT_TRUE(WaitUntil([&] { return !Notifications().empty(); }, 30s))
      << daemon_->Log() << alertmanager_->Log();
  std::this_thread::sleep_for(3s);  // no second notification follows
  std::vector<Json> notifications = Notifications();
  ASSERT_EQ(notifications.size(), 1u) << Json(notifications).dump(1);
  const Json& first = notifications[0];
  EXPECT_EQ(first["status"], "firing");
  EXPECT_EQ(first["groupLabels"], Json({{"job_id", "jobA"}})) << first.dump(1);
  ASSERT_EQ(first["alerts"].size(), 3u) << first.dump(1);
  std::set<std::string> nodes;
  for (const Json& alert : first["alerts"]) {
    nodes.insert(alert["labels"]["node"].get<std::string>());
    EXPECT_EQ(alert["labels"]["alertname"], "TrainwatchIncident");
    EXPECT_EQ(alert["labels"]["kind"], "crash");
    EXPECT_EQ(alert["labels"]["cause"], "application");
    EXPECT_EQ(alert["labels"]["action"], "cancel_retries");
  }
  EXPECT_EQ(nodes, (std::set<std::string>{"node0", "node1", "node2"}));
  const Json status = daemon_->Status(state())["alertmanager"];
  EXPECT_EQ(status["open"], 1) << status.dump(1);
  EXPECT_EQ(status["error"], "");

  // Alertmanager goes away; node0 has a new incident, and restarts, while it is down.
  StopAlertmanager();
  Append(Dir("logs/job.log"), "[rank1]: MARK 2 FIRE\n");
  ASSERT_TRUE(WaitUntil([&] { return ReadIncidents(state()).size() == 2; }, 20s));
  ASSERT_TRUE(WaitUntil(
      [&] { return !daemon_->Status(state())["alertmanager"].value("error", "").empty(); }, 20s))
      << daemon_->Log();
  daemon_->Signal(SIGTERM);
  ASSERT_EQ(daemon_->Wait(), 0) << daemon_->Log();
  StartDaemon();
  StartAlertmanager();
  // Every alert is back in Alertmanager (the new one from the restarted daemon's store, the
  // others by their resend), and the receiver hears of the new one.
  ASSERT_TRUE(WaitUntil([&] { return ActiveAlerts().size() == 4; }, 60s))
      << ActiveAlerts().dump(1) << daemon_->Log();
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (const Json& notification : Notifications()) {
          for (const Json& alert : notification["alerts"]) {
            if (alert["labels"].value("rank", "") == "1") {
              return true;
            }
          }
        }
        return false;
      },
      30s))
      << Json(Notifications()).dump(1);

  // Acknowledged on every node: each alert ends, and the receiver is told it resolved.
  const std::pair<std::string, std::string> acks[] = {
      {config(), IncidentOf(state(), 0)},
      {config(), IncidentOf(state(), 1)},
      {Dir("node1.yaml"), IncidentOf(Dir("state1"))},
      {Dir("node2.yaml"), IncidentOf(Dir("state2"))}};
  for (const auto& [node_config, id] : acks) {
    const RunResult acked = RunBinary(
        {TrainwatchBinary(), "incidents", "ack", id, "--why", "test", "--config", node_config});
    ASSERT_EQ(acked.exit_code, 0) << acked.out << acked.err;
  }
  // The acks take a moment each (a CLI run); an Alertmanager group_interval that ticks between
  // them tells of the first ones apart: every alert is told resolved, the last notification
  // says the group is.
  // (Nothing was resolved before the acks: all four were active above.)
  ASSERT_TRUE(WaitUntil(
      [&] {
        const std::vector<Json> all = Notifications();
        std::set<std::string> resolved;
        for (const Json& notification : all) {
          if (!notification.is_object() || !notification.contains("alerts")) {
            continue;  // a line still being written
          }
          for (const Json& alert : notification["alerts"]) {
            if (alert.value("status", "") == "resolved" && alert.contains("annotations")) {
              resolved.insert(alert["annotations"].value("incident", ""));
            }
          }
        }
        return !all.empty() && all.back().is_object() &&
               all.back().value("status", "") == "resolved" && resolved.size() == 4;
      },
      30s))
      << Json(Notifications()).dump(1);
  EXPECT_TRUE(ActiveAlerts().empty()) << ActiveAlerts().dump(1);
  EXPECT_EQ(daemon_->Status(state())["alertmanager"]["ends_unsent"], 0);
}

}  // namespace
}  // namespace trainwatch::testing
