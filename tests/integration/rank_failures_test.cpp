// Real four-rank gloo jobs (tests/integration/jobs/rank_failures.py, launched as torchrun
// launches: a process per rank with RANK set, a log per rank, and the launcher's copy of them
// all with "[rankN]:" prefixes) where one rank fails and its peers fail after it. In either
// shape of log, the daemon's one incident is named by the culprit's own error and names it as
// the first failing rank — not a peer's "Connection closed by peer" nor the launcher's report.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
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
  ExpectScanGivesTheSameAnswer(incident, {Dir("logs/console.log")});
}

TEST_F(RankFailuresTest, ALogPerRankNamesTheRankThatRaisedFromItsWritersRank) {
  WriteConfig({.settle = "2s", .paths = "logs/ranks/*.log"});
  StartDaemon();
  const Json incident = OneIncidentOf("value_error", Dir("console.log"), Dir("logs/ranks"));
  ExpectTheCulpritsOwnError(incident);
  // Replayed, the file names (rank<N>.log) stand for the writers' RANK.
  std::vector<std::string> logs;
  for (int rank = 0; rank < 4; ++rank) {
    logs.push_back(Dir("logs/ranks/rank" + std::to_string(rank) + ".log"));
  }
  ExpectScanGivesTheSameAnswer(incident, logs);
}

TEST_F(RankFailuresTest, UnderWrapTheLaunchersPipeNamesTheRankThatRaised) {
  WriteConfig({.settle = "2s"});
  std::ofstream(config(), std::ios::app) << "wrap: {log_file: \"logs/wrapped-{pid}.log\"}\n";
  DaemonProcess wrap(
      {"wrap", "--config", config(), "--", "/usr/bin/python3", JobScript("rank_failures.py"),
       "--scenario", "value_error", "--log-dir", Dir("ranks"), "--ranks", "4", "--culprit", "2"},
      Dir("wrap.out"));
  EXPECT_EQ(wrap.Wait(120s), 1) << wrap.Log();
  const std::vector<Json> incidents = ReadIncidents(state());
  ASSERT_EQ(incidents.size(), 1u) << wrap.Log();
  ExpectTheCulpritsOwnError(incidents[0]);
  // The launcher's output as wrap kept it gives the same answer replayed.
  std::vector<std::string> kept;
  for (const auto& entry : std::filesystem::directory_iterator(Dir("logs"))) {
    kept.push_back(entry.path().string());
  }
  ASSERT_EQ(kept.size(), 1u);
  ExpectScanGivesTheSameAnswer(incidents[0], kept);
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

// A hang: the test pack's 3 s stall of the ranks' step lines opens it, and its capture takes
// every rank's stacks (gdb, eu-stack) and says what they show.
class RankHangsTest : public RankFailuresTest {
 protected:
  // The bundle record of the one incident `scenario` made, culprit `culprit`.
  Json BundleOf(const std::string& scenario, int culprit, const std::string& extra_rules = "",
                bool python_hook = false) {
    WriteConfig({.settle = "2s",
                 .paths = "logs/console.log",
                 .extra_rules = extra_rules,
                 .capture = "capture: {commands: [], habana_logs: none}\n"});
    StartDaemon();
    std::vector<std::string> args = {"--scenario", scenario, "--log-dir", Dir("ranks"),
                                     "--ranks",    "4",      "--culprit", std::to_string(culprit)};
    if (python_hook) {
      args.insert(args.end(),
                  {"--python-hook", std::string(TRAINWATCH_TEST_SOURCE_DIR) + "/../daemon/python"});
    }
    JobProcess job(JobScript("rank_failures.py"), args, Dir("logs/console.log"));
    Json bundle;
    EXPECT_TRUE(WaitUntil(
        [&] {
          std::ifstream in(state() + "/incidents.jsonl");
          std::string line;
          while (std::getline(in, line) && !in.eof()) {
            const Json record = Json::parse(line, nullptr, false);
            if (record.is_object() && record.contains("bundle_for")) {
              bundle = record;
              return true;
            }
          }
          return false;
        },
        180s))
        << daemon_->Log();
    job.KillGroup();
    EXPECT_EQ(ReadIncidents(state()).size(), 1u) << daemon_->Log();
    return bundle;
  }

  static std::vector<std::string> SuspectLabels(const Json& bundle) {
    std::vector<std::string> labels;
    for (const Json& suspect : bundle.value("suspects", Json::array())) {
      labels.push_back(suspect.value("label", ""));
    }
    return labels;
  }
};

TEST_F(RankHangsTest, ARankInAnotherCollectiveIsAMismatchAndTheOnlySuspect) {
  const Json bundle = BundleOf("mismatch", 2);
  ASSERT_TRUE(bundle.contains("stacks_say")) << bundle.dump(1) << daemon_->Log();
  EXPECT_EQ(bundle["stacks_say"].value("kind", ""), "collective_mismatch") << bundle.dump(1);
  EXPECT_EQ(bundle["stacks_say"].value("cause", ""), "application");
  EXPECT_EQ(bundle["stacks_say"]["culprits"], Json::array({"rank 2"})) << bundle.dump(1);
  const std::string says = bundle["stacks_say"].value("says", "");
  EXPECT_NE(says.find("rank 2 in broadcast at rank_failures.py:"), std::string::npos) << says;
  EXPECT_NE(says.find("ranks 0, 1, 3 in all_reduce at rank_failures.py:"), std::string::npos)
      << says;
  EXPECT_EQ(SuspectLabels(bundle), std::vector<std::string>{"rank 2"}) << bundle.dump(1);
}

TEST_F(RankHangsTest, ARankBlockedOnALockItHoldsIsADeadlockAndTheOnlySuspect) {
  const Json bundle = BundleOf("lock", 1);
  ASSERT_TRUE(bundle.contains("stacks_say")) << bundle.dump(1) << daemon_->Log();
  EXPECT_EQ(bundle["stacks_say"].value("kind", ""), "deadlock") << bundle.dump(1);
  EXPECT_EQ(bundle["stacks_say"]["culprits"], Json::array({"rank 1"})) << bundle.dump(1);
  const std::string says = bundle["stacks_say"].value("says", "");
  EXPECT_NE(says.find("in log_metrics at rank_failures.py:"), std::string::npos) << says;
  EXPECT_NE(says.find("already holds"), std::string::npos) << says;
  EXPECT_EQ(SuspectLabels(bundle), std::vector<std::string>{"rank 1"}) << bundle.dump(1);
}

// A job whose rank 3 of 4 never started: ranks 0-2 wait in the rendezvous, printing nothing,
// until the source's 3 s silence opens the hang.
TEST_F(RankHangsTest, RanksWaitingInTheRendezvousSayWhichRankNeverJoined) {
  const Json bundle = BundleOf("missing", 3,
                               "  - id: test.train_silence\n"
                               "    kind: hang\n"
                               "    tags: [train]\n"
                               "    description: No output for 3s\n"
                               "    silence: {after: 3s}\n");
  ASSERT_TRUE(bundle.contains("stacks_say")) << bundle.dump(1) << daemon_->Log();
  EXPECT_EQ(bundle["stacks_say"].value("kind", ""), "rendezvous") << bundle.dump(1);
  EXPECT_EQ(bundle["stacks_say"].value("cause", ""), "infrastructure") << bundle.dump(1);
  const std::string says = bundle["stacks_say"].value("says", "");
  EXPECT_NE(says.find("rank 3 of 4 never joined"), std::string::npos) << says;
  EXPECT_EQ(bundle.value("roster", ""), "world size 4: ranks 0-2 alive; rank 3 never seen")
      << bundle.dump(1);
}

// A site's own stack rule, beside the log rules, decides before the built-in deadlock verdict.
TEST_F(RankHangsTest, ASitesStackRuleNamesTheHangInItsOwnWords) {
  const Json bundle = BundleOf("lock", 1,
                               "  - id: site.metrics_lock\n"
                               "    kind: hang\n"
                               "    cause: application\n"
                               "    action: cancel_retries\n"
                               "    tags: [train]\n"
                               "    description: Our metrics logger holds its lock forever\n"
                               "    stack:\n"
                               "      function: '^log_metrics$'\n"
                               "      file: 'rank_failures\\.py$'\n"
                               "      says: '{rank} is stuck in our metrics logger "
                               "({function} at {file}:{line}): upgrade metricslib'\n"
                               "    examples:\n"
                               "      fires: ['  File \"/j/rank_failures.py\", line 4, in "
                               "log_metrics']\n"
                               "      quiet: ['  File \"/j/rank_failures.py\", line 4, in "
                               "step']\n");
  ASSERT_TRUE(bundle.contains("stacks_say")) << bundle.dump(1) << daemon_->Log();
  EXPECT_EQ(bundle["stacks_say"].value("kind", ""), "site.metrics_lock") << bundle.dump(1);
  EXPECT_EQ(bundle["stacks_say"].value("action", ""), "cancel_retries") << bundle.dump(1);
  EXPECT_EQ(bundle["stacks_say"]["culprits"], Json::array({"rank 1"})) << bundle.dump(1);
  const std::string says = bundle["stacks_say"].value("says", "");
  EXPECT_NE(says.find("rank 1 is stuck in our metrics logger (log_metrics at rank_failures.py:"),
            std::string::npos)
      << says;
}

// The ranks run with trainwatch's Python hook (as under wrap): the rank's own stacks come from
// it, its workers' from gdb.
TEST_F(RankHangsTest, ARankWaitingForAStuckDataLoaderWorkerIsNamed) {
  const Json bundle = BundleOf("dataloader", 1, "", /*python_hook=*/true);
  ASSERT_TRUE(bundle.contains("stacks_say")) << bundle.dump(1) << daemon_->Log();
  EXPECT_EQ(bundle["stacks_say"].value("kind", ""), "dataloader") << bundle.dump(1);
  EXPECT_EQ(bundle["stacks_say"]["culprits"], Json::array({"rank 1"})) << bundle.dump(1);
  // The workers' own stacks were taken: the stuck one is named with the dataset's frame.
  const std::string says = bundle["stacks_say"].value("says", "");
  EXPECT_NE(says.find("): worker pid "), std::string::npos) << says;
  EXPECT_NE(says.find(" is in __getitem__ at rank_failures.py:"), std::string::npos) << says;
  EXPECT_EQ(SuspectLabels(bundle), std::vector<std::string>{"rank 1"}) << bundle.dump(1);
}

// A rank's loopback traffic dropped (iptables on its ports, as the job does itself): its
// peers hang in all_reduce as NCCL's do instead of failing at once as gloo's would.
class RankTrafficTest : public RankHangsTest {
 protected:
  void SetUp() override {
    RankHangsTest::SetUp();
    if (!IsSkipped() && std::system("iptables -S INPUT >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "iptables cannot list INPUT here (not root, or no iptables): the peers "
                      "of a killed gloo rank would not hang";
    }
  }
  void TearDown() override {
    // A launcher killed by the test leaves its rules: they would drop the next test's ports.
    // Only this job's (named for its log dir): a test beside it (ctest -j) keeps its own.
    RunBinary({"/usr/bin/python3", JobScript("rank_failures.py"), "--drop-rules", "--log-dir",
               Dir("ranks")});
    RankHangsTest::TearDown();
  }
};

TEST_F(RankTrafficTest, ARankKilledWhileItsPeersHangIsGoneWithHowItDiedAndTheOnlySuspect) {
  const Json bundle = BundleOf("killed", 3);
  ASSERT_TRUE(bundle.contains("stacks_say")) << bundle.dump(1) << daemon_->Log();
  EXPECT_EQ(bundle["stacks_say"].value("kind", ""), "rank_gone") << bundle.dump(1);
  EXPECT_EQ(bundle["stacks_say"]["culprits"], Json::array({"rank 3"})) << bundle.dump(1);
  const std::string says = bundle["stacks_say"].value("says", "");
  // How it died, where the daemon hears the kernel's process events (root on a host).
  const std::string how = HearsExits() ? " (killed by signal 9 (SIGKILL))" : "";
  EXPECT_NE(says.find(std::string("rank 3 is gone") +
                      (how.empty() ? "" : " (rank 3: killed by signal 9 (SIGKILL))") +
                      " while ranks 0-2 wait in all_reduce at rank_failures.py:"),
            std::string::npos)
      << says;
  // The launcher wrote the log, not the ranks: rank 3 is known from the roster alone.
  EXPECT_EQ(bundle.value("roster", ""), "world size 4: ranks 0-2 alive; rank 3 exited" + how)
      << bundle.dump(1);
  EXPECT_EQ(SuspectLabels(bundle), std::vector<std::string>{"rank 3"}) << bundle.dump(1);
}

TEST_F(RankTrafficTest, EveryRankInTheSameAllReduceWithItsTrafficDroppedIsTheNetwork) {
  const Json bundle = BundleOf("partition", 0);
  ASSERT_TRUE(bundle.contains("stacks_say")) << bundle.dump(1) << daemon_->Log();
  EXPECT_EQ(bundle["stacks_say"].value("kind", ""), "all_waiting") << bundle.dump(1);
  EXPECT_EQ(bundle["stacks_say"].value("cause", ""), "infrastructure") << bundle.dump(1);
  EXPECT_TRUE(bundle["stacks_say"]["culprits"].empty()) << bundle.dump(1);
  EXPECT_EQ(bundle.value("roster", ""), "world size 4: ranks 0-3 alive") << bundle.dump(1);
  EXPECT_TRUE(SuspectLabels(bundle).empty()) << bundle.dump(1);
}

}  // namespace
}  // namespace trainwatch::testing
