// Real four-rank gloo jobs (tests/integration/jobs/rank_failures.py, launched as torchrun
// launches: a process per rank with RANK set, a log per rank, and the launcher's copy of them
// all with "[rankN]:" prefixes) where one rank fails and its peers fail after it. In either
// shape of log, the daemon's one incident is named by the culprit's own error and names it as
// the first failing rank — not a peer's "Connection closed by peer" nor the launcher's report.
#include <gtest/gtest.h>

#include <thread>

#include "integration/daemon_fixture.h"
#include "support/run_binary.h"

namespace trainwatch::testing {
namespace {

class RankFailuresTest : public DaemonTest {
 protected:
  void SetUp() override {
    if (!HavePyTorch()) {
      GTEST_SKIP() << kNoPyTorch;
    }
  }

  // Runs the scenario with the launcher's copy in `console` and the ranks' logs in
  // `rank_dir`; the one incident it made (a failed assertion otherwise).
  Json OneIncidentOf(const std::string& scenario, const std::string& console,
                     const std::string& rank_dir) {
    JobProcess job(
        JobScript("rank_failures.py"),
        {"--scenario", scenario, "--log-dir", rank_dir, "--ranks", "4", "--culprit", "2"}, console);
    EXPECT_EQ(job.Wait(120s), 1);
    EXPECT_TRUE(WaitUntil([&] { return !ReadIncidents(state()).empty(); }, 15s)) << daemon_->Log();
    std::this_thread::sleep_for(2500ms);  // past the settle: anything split off shows now
    const std::vector<Json> incidents = ReadIncidents(state());
    EXPECT_EQ(incidents.size(), 1u) << daemon_->Log();
    return incidents.empty() ? Json::object() : incidents.front();
  }

  static void ExpectTheCulpritsOwnError(const Json& incident) {
    EXPECT_EQ(incident.value("summary", ""), "ValueError: bad batch at step 20")
        << incident.dump(1);
    EXPECT_EQ(incident.value("first_failing_rank", -1), 2) << incident.dump(1);
    EXPECT_EQ(incident.value("cause", ""), "application") << incident.dump(1);
    // The peers' gloo errors joined it, as what they suffered.
    bool peers_joined = false;
    for (const Json& firing : incident["firings"]) {
      if (firing.value("rule", "") == "pytorch.gloo.error") {
        peers_joined = true;
        EXPECT_EQ(firing.value("role", ""), "consequence") << firing.dump(1);
        EXPECT_NE(firing.value("rank", -1), 2) << firing.dump(1);
      }
    }
    EXPECT_TRUE(peers_joined) << incident.dump(1);
  }
};

TEST_F(RankFailuresTest, OneSharedPrefixedLogNamesTheRankThatRaisedNotItsPeers) {
  WriteConfig({.settle = "2s", .paths = "logs/console.log"});
  StartDaemon();
  const Json incident = OneIncidentOf("value_error", Dir("logs/console.log"), Dir("ranks"));
  ExpectTheCulpritsOwnError(incident);
}

TEST_F(RankFailuresTest, ALogPerRankNamesTheRankThatRaisedFromItsWritersRank) {
  WriteConfig({.settle = "2s", .paths = "logs/ranks/*.log"});
  StartDaemon();
  const Json incident = OneIncidentOf("value_error", Dir("console.log"), Dir("logs/ranks"));
  ExpectTheCulpritsOwnError(incident);
}

TEST_F(RankFailuresTest, PeersThatHangAfterTheCulpritRaisedFollowItsIncidentUp) {
  WriteConfig({.settle = "2s", .paths = "logs/console.log"});
  StartDaemon();
  JobProcess job(JobScript("rank_failures.py"),
                 {"--scenario", "value_error_lingers", "--log-dir", Dir("ranks"), "--ranks", "4",
                  "--culprit", "2"},
                 Dir("logs/console.log"));
  // The survivors' step lines stop with the culprit's traceback; the test pack's stall is 3 s.
  const auto followed_up = [&] {
    return daemon_->Log().find("as a follow-up") != std::string::npos;
  };
  EXPECT_TRUE(WaitUntil(followed_up, 90s)) << daemon_->Log();
  job.KillGroup();
  const std::vector<Json> incidents = ReadIncidents(state());
  ASSERT_EQ(incidents.size(), 1u) << daemon_->Log();
  EXPECT_EQ(incidents[0].value("summary", ""), "ValueError: bad batch at step 20")
      << incidents[0].dump(1);
  EXPECT_EQ(incidents[0].value("first_failing_rank", -1), 2);
  const RunResult shown =
      RunBinary({TrainwatchBinary(), "incidents", "show", incidents[0]["id"].get<std::string>(),
                 "--json", "--config", config()});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const Json record = Json::parse(shown.out);
  ASSERT_TRUE(record.contains("follow_ups")) << record.dump(1);
  EXPECT_EQ(record["follow_ups"][0].value("rule", ""), "test.stall") << record.dump(1);
  EXPECT_NE(record["follow_ups"][0].value("why", "").find("a hang of the same job within 30m"),
            std::string::npos)
      << record.dump(1);
}

}  // namespace
}  // namespace trainwatch::testing
