// The job across nodes through a shared directory, with the real binary: two daemons with
// their own node names, state and logs, sharing one directory; each publishes its incidents
// there, `trainwatch job` merges them, a shared directory that goes away loses nothing, and
// a real PyTorch job's failing rank on one node makes the other capture its own ranks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cluster/peer_record.h"
#include "integration/daemon_fixture.h"
#include "support/file_text.h"
#include "support/run_binary.h"

namespace trainwatch::testing {
namespace {

// Whether the outbox folder holds a record; one not made yet, or removed once drained, holds
// none (the daemon makes and removes it while the test looks: no throwing check).
bool OutboxHolds(const std::string& folder) {
  std::error_code error;
  const bool empty = std::filesystem::is_empty(folder, error);
  return !error && !empty;
}

namespace fs = std::filesystem;

class ClusterTest : public DaemonTest {
 protected:
  // node0 is the fixture's daemon (logs/, state/); node1 watches logs1/ into state1/.
  void StartNodes(const std::string& cluster =
                      "cluster: {node_name: node0, job_id: jobA, shared_dir: shared}\n",
                  const std::string& cooldown = "0s", const std::string& node1_shared = "",
                  const std::string& extra_rules = "", const std::string& follow_up = "") {
    WriteConfig({.cooldown = cooldown,
                 .follow_up = follow_up,
                 .extra_rules = extra_rules,
                 .capture = "capture: {commands: [], habana_logs: none}\n" + cluster});
    std::string text = ReadFile(config());
    for (const auto& [from, to] :
         {std::pair<std::string, std::string>{"state_dir: state", "state_dir: state1"},
          {"logs/**/*.log", "logs1/**/*.log"},
          {"node_name: node0", "node_name: node1"}}) {
      const std::size_t at = text.find(from);
      ASSERT_NE(at, std::string::npos) << from;
      text.replace(at, from.size(), to);
    }
    if (!node1_shared.empty()) {  // node1 mounts the shared file system elsewhere
      const std::size_t at = text.find("shared_dir: ");
      const std::size_t end = text.find_first_of(",}", at);
      text.replace(at, end - at, "shared_dir: " + node1_shared);
    }
    std::ofstream(Dir("node1.yaml")) << text;
    fs::create_directories(Dir("logs1"));
    if (node1_shared.empty()) {
      fs::create_directories(Dir("shared/jobs"));  // made once on the shared file system
    }
    StartDaemon();
    node1_ = std::make_unique<DaemonProcess>(
        std::vector<std::string>{"daemon", "--config", Dir("node1.yaml")}, Dir("node1.log"));
    ASSERT_TRUE(node1_->WaitReady(Dir("state1"))) << node1_->Log();
  }
  std::vector<Json> Published() const {
    std::vector<Json> records;
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(Dir("shared/jobs/jobA"), error)) {
      if (entry.path().extension() == ".json") {
        records.push_back(Json::parse(ReadFile(entry.path().string()), nullptr, false));
      }
    }
    return records;
  }
  bool AllHaveBundles(std::size_t count) const {
    const std::vector<Json> records = Published();
    return records.size() == count &&
           std::all_of(records.begin(), records.end(), [](const Json& record) {
             return record.is_object() && !record.value("bundle", "").empty();
           });
  }
  // A job of world size 4 over the two nodes (two_node_ranks.py, its id from the ranks'
  // TORCHELASTIC_RUN_ID, not the config): ranks 0-1 write node0's log, ranks 2-3 node1's,
  // rank 3 failing as `crash` says (two_node_ranks.py's --crash-* options).
  struct TwoNodeJob {
    std::string run_id;
    std::unique_ptr<JobProcess> node0;
    std::unique_ptr<JobProcess> node1;
  };
  TwoNodeJob StartTwoNodeJob(const std::vector<std::string>& crash,
                             const std::vector<std::string>& node0_extra = {},
                             const std::string& extra_rules = "") {
    StartNodes("cluster: {node_name: node0, shared_dir: shared, poll_interval: 1s}\n", "5m", "",
               extra_rules);
    TwoNodeJob job{"run-" + std::to_string(::getpid()), nullptr, nullptr};
    const std::string port = std::to_string(FreeLoopbackPort());
    std::vector<std::string> node0_args = {"--node-rank", "0",        "--port",
                                           port,          "--run-id", job.run_id};
    node0_args.insert(node0_args.end(), node0_extra.begin(), node0_extra.end());
    job.node0 = std::make_unique<JobProcess>(JobScript("two_node_ranks.py"), node0_args,
                                             Dir("logs/ranks.log"));
    std::vector<std::string> node1_args = {"--node-rank", "1",        "--port",       port,
                                           "--run-id",    job.run_id, "--crash-rank", "3"};
    node1_args.insert(node1_args.end(), crash.begin(), crash.end());
    job.node1 = std::make_unique<JobProcess>(JobScript("two_node_ranks.py"), node1_args,
                                             Dir("logs1/ranks.log"));
    return job;
  }

  std::unique_ptr<DaemonProcess> node1_;
};

// A real network file system: sshfs (FUSE, the SFTP protocol) mounting `exported` at
// `mount_point`, its SFTP server started directly by its ssh_command (no sshd needed on the
// machine), with directory caching off as the operator guide says. Unmounted at the end.
class SshfsMount {
 public:
  SshfsMount(const std::string& exported, const std::string& mount_point,
             const std::string& scratch) {
    const std::string server = scratch + "/sftp-server.sh";
    if (!fs::exists(server)) {
      std::ofstream(server) << "#!/bin/sh\nexec /usr/lib/openssh/sftp-server\n";
      fs::permissions(server, fs::perms::owner_all);
    }
    fs::create_directories(mount_point);
    mount_point_ = mount_point;
    sshfs_ = DaemonProcess::Program({"/usr/bin/sshfs", "-f", "-o", "ssh_command=" + server, "-o",
                                     "dir_cache=no", "localhost:" + exported, mount_point},
                                    scratch + "/sshfs" + std::to_string(::getpid()) + ".log");
    mounted_ = WaitUntil([&] { return Mounted(); }, 10s);
  }
  ~SshfsMount() { Kill(); }
  SshfsMount(const SshfsMount&) = delete;
  SshfsMount& operator=(const SshfsMount&) = delete;
  bool mounted() const { return mounted_; }
  // The file system's process dies: the mount answers "Transport endpoint is not connected".
  void Kill() {
    sshfs_.reset();
    if (!mount_point_.empty()) {
      std::system(("umount -l '" + mount_point_ + "' 2>/dev/null").c_str());
    }
  }
  void KillKeepingTheDeadMount() { sshfs_.reset(); }
  bool Mounted() const {
    return ReadFile("/proc/mounts").find(" " + mount_point_ + " fuse.sshfs") != std::string::npos;
  }

 private:
  std::string mount_point_;
  std::unique_ptr<DaemonProcess> sshfs_;
  bool mounted_ = false;
};

bool CanMountSshfs() {
  return ::geteuid() == 0 && fs::exists("/dev/fuse") && fs::exists("/usr/bin/sshfs") &&
         fs::exists("/usr/lib/openssh/sftp-server");
}

// The records of incidents.jsonl (incidents, bundle and resolution records), whole lines.
std::vector<Json> Records(const std::string& state_dir) {
  std::vector<Json> records;
  std::ifstream in(state_dir + "/incidents.jsonl");
  std::string line;
  while (std::getline(in, line) && !in.eof()) {
    records.push_back(Json::parse(line, nullptr, false));
  }
  return records;
}

TEST_F(ClusterTest, EachNodePublishesAndJobMergesThemInTimeOrder) {
  StartNodes();
  Append(Dir("logs1/job.log"), "[rank3]: MARK 1 FIRE\n");
  ASSERT_TRUE(WaitUntil([&] { return Published().size() == 1; }, 20s)) << node1_->Log();
  std::this_thread::sleep_for(1s);  // node0's comes later, past any doubt of ordering
  Append(Dir("logs/job.log"), "[rank0]: MARK 2 FIRE\n");
  // Each record is rewritten with its bundle once captured.
  ASSERT_TRUE(WaitUntil([&] { return AllHaveBundles(2); }, 60s)) << daemon_->Log() << node1_->Log();
  const std::vector<Json> records = Published();
  for (const Json& record : records) {
    EXPECT_EQ(record["job_id"], "jobA");
    EXPECT_TRUE(fs::exists(record["bundle"].get<std::string>())) << record.dump(1);
  }

  const RunResult merged =
      RunBinary({TrainwatchBinary(), "job", "jobA", "--shared-dir", Dir("shared")});
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  EXPECT_NE(merged.out.find("job jobA: 2 incidents from 2 nodes"), std::string::npos) << merged.out;
  EXPECT_NE(merged.out.find("first      node1 rank 3 at "), std::string::npos) << merged.out;
  EXPECT_LT(merged.out.find("  node1  crash"), merged.out.find("  node0  crash")) << merged.out;
  const RunResult listed = RunBinary({TrainwatchBinary(), "job", "--config", config()});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("jobA: 2 incidents from 2 nodes, first on node1"), std::string::npos)
      << listed.out;
}

TEST_F(ClusterTest, ASharedDirectoryThatGoesAwayLosesNoRecord) {
  StartNodes();
  fs::rename(Dir("shared"), Dir("shared.gone"));  // the mount went away
  Append(Dir("logs/job.log"), "[rank0]: MARK 1 FIRE\n");
  // Detected and recorded here all the same; the record waits in the outbox.
  ASSERT_TRUE(WaitUntil([&] { return ReadIncidents(state()).size() == 1; }, 20s)) << daemon_->Log();
  ASSERT_TRUE(WaitUntil([&] { return OutboxHolds(Dir("state/outbox/jobA")); }, 10s));
  // The record is in the outbox before the publisher tries (and fails) on the pool.
  EXPECT_TRUE(WaitUntil(
      [&] {
        return daemon_->Log().find("cannot publish to the shared directory") != std::string::npos;
      },
      10s))
      << daemon_->Log();
  EXPECT_FALSE(fs::exists(Dir("shared"))) << "nothing made where the mount should be";
  fs::rename(Dir("shared.gone"), Dir("shared"));
  // Retried with backoff (2 s, then 4 s, ...): lands, with its bundle.
  ASSERT_TRUE(WaitUntil([&] { return AllHaveBundles(1); }, 30s)) << daemon_->Log();
  EXPECT_TRUE(WaitUntil([&] { return !OutboxHolds(Dir("state/outbox/jobA")); }, 10s));
  EXPECT_NE(daemon_->Log().find("takes records again"), std::string::npos) << daemon_->Log();
  const Json shared = daemon_->Status(state())["shared"];
  EXPECT_EQ(shared["pending"], 0) << shared.dump(1);
  EXPECT_EQ(shared["error"], "");
  EXPECT_GE(shared["published"].get<int>(), 1);
}

TEST_F(ClusterTest, APeerNodeCapturesItsRanksWhenAnotherNodesRankFails) {
  if (!HavePyTorch()) {
    GTEST_SKIP() << kNoPyTorch;
  }
  // Rank 3 fails and hangs at exit, holding its connections: the others block in all_reduce.
  TwoNodeJob job = StartTwoNodeJob({});
  const std::string& run_id = job.run_id;
  Json failure;
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (const Json& incident : ReadIncidents(Dir("state1"))) {
          if (incident["kind"] == "crash") {
            failure = incident;
            return true;
          }
        }
        return false;
      },
      120s))
      << node1_->Log() << ReadFile(Dir("logs1/ranks.log"));
  EXPECT_EQ(failure["job"]["id"], run_id) << failure.dump(1);
  // node0 captures for it: a peer incident linked to node1's, its own ranks in the bundle.
  Json peer;
  Json bundle;
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (const Json& record : Records(state())) {
          if (record.value("kind", "") == "peer") {
            peer = record;
          } else if (peer.is_object() && record.value("bundle_for", "") == peer["id"]) {
            bundle = record;
            return true;
          }
        }
        return false;
      },
      90s))
      << daemon_->Log();
  EXPECT_EQ(peer["peer"]["node"], "node1") << peer.dump(1);
  EXPECT_EQ(peer["peer"]["incident"], failure["id"]);
  EXPECT_EQ(peer["peer"]["first_rank"], 3);
  EXPECT_EQ(peer["job"]["id"], run_id);
  ASSERT_TRUE(bundle["bundle"].is_string()) << bundle.dump(1) << daemon_->Log();
  // From node1's first firing line to node0's bundle, on one machine's clock.
  const std::int64_t bundle_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::file_clock::to_sys(fs::last_write_time(bundle["bundle"].get<std::string>()))
              .time_since_epoch())
          .count();
  const double latency =
      static_cast<double>(bundle_ms - failure["opened_ms"].get<std::int64_t>()) / 1000;
  RecordProperty("first_firing_to_peer_bundle_seconds", std::to_string(latency));
  std::printf("node1's first firing line to node0's peer bundle: %.2f s\n", latency);
  EXPECT_LT(latency, 60.0);
  EXPECT_NEAR(bundle["firing_to_bundle_seconds"].get<double>(), latency, 1.0);
  const std::string ranks_summary = bundle.value("ranks", "");
  EXPECT_NE(ranks_summary, "") << bundle.dump(1);
  if (std::system("command -v gdb > /dev/null 2>&1") == 0 &&
      fs::exists("/usr/share/gdb/auto-load/usr/bin/python3.11-gdb.py")) {
    // Its ranks wait in all_reduce, as seen by their Python stacks.
    EXPECT_NE(ranks_summary.find("ranks 0, 1: all_reduce at two_node_ranks.py"), std::string::npos)
        << bundle.dump(1);
  }
  // One peer capture for the job's failure: node1's record is rewritten with its bundle, and
  // node0 does not capture again.
  std::this_thread::sleep_for(3s);
  int peers = 0;
  for (const Json& incident : ReadIncidents(state())) {
    peers += incident["kind"] == "peer" ? 1 : 0;
  }
  EXPECT_EQ(peers, 1);
  const Json shared = daemon_->Status(state())["shared"];
  EXPECT_EQ(shared["peer_captures"], 1) << shared.dump(1);
  EXPECT_EQ(shared["watched_jobs"], Json::array({run_id})) << shared.dump(1);
  // The peer bundle's report shows the job on every node, node1's incident first.
  const RunResult report =
      RunBinary({TrainwatchBinary(), "report", bundle["bundle"], "--out", "-"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const std::size_t job_section = report.out.find("<section id=\"job\">");
  ASSERT_NE(job_section, std::string::npos) << report.out;
  EXPECT_NE(report.out.find("<tr class=\"first\"><td>", job_section), std::string::npos);
  EXPECT_NE(report.out.find("</td><td>node1</td><td>3</td><td>crash</td>", job_section),
            std::string::npos)
      << report.out.substr(job_section, 2000);
  EXPECT_NE(report.out.find("<p id=\"peer\">Captured because node <strong>node1</strong>"),
            std::string::npos);
  // The merged view names node1 and rank 3 first; node0's peer capture is not published.
  const RunResult merged =
      RunBinary({TrainwatchBinary(), "job", run_id, "--shared-dir", Dir("shared")});
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  EXPECT_NE(merged.out.find("first      node1 rank 3 at "), std::string::npos) << merged.out;
  job.node0->KillGroup();
  job.node1->KillGroup();
}

// Issue 29's two-node row: rank 3 (node1) raises a ValueError and exits; every other rank, on
// both nodes, then fails on gloo's "Connection closed by peer". One incident per node, and
// one answer for the job: the ValueError, rank 3 on node1, never a survivor's consequence.
TEST_F(ClusterTest, AnErrorAndItsConsequencesOnTwoNodesAreOneAnswer) {
  if (!HavePyTorch()) {
    GTEST_SKIP() << kNoPyTorch;
  }
  TwoNodeJob job = StartTwoNodeJob({"--crash-exits"});
  const std::string& run_id = job.run_id;
  // Both nodes have spoken once every rank is gone and their settle times are over.
  const auto every_rank_failed = [&] {
    const std::string node0 = ReadFile(Dir("logs/ranks.log"));
    const std::string node1 = ReadFile(Dir("logs1/ranks.log"));
    return node1.find("ValueError: bad batch at step 5") != std::string::npos &&
           node0.find("[rank0]:") != std::string::npos &&
           node0.find("[rank1]:RuntimeError") != std::string::npos &&
           node0.find("[rank0]:RuntimeError") != std::string::npos;
  };
  ASSERT_TRUE(WaitUntil(every_rank_failed, 120s))
      << ReadFile(Dir("logs/ranks.log")) << ReadFile(Dir("logs1/ranks.log"));
  std::vector<Json> node0_incidents;
  std::vector<Json> node1_incidents;
  ASSERT_TRUE(WaitUntil(
      [&] {
        node0_incidents = ReadIncidents(state());
        node1_incidents = ReadIncidents(Dir("state1"));
        return !node0_incidents.empty() && !node1_incidents.empty();
      },
      60s))
      << daemon_->Log() << node1_->Log();
  std::this_thread::sleep_for(8s);  // anything that would come late (a second incident)
  node0_incidents = ReadIncidents(state());
  node1_incidents = ReadIncidents(Dir("state1"));
  const std::string logs = daemon_->Log() + "\n--- node1 ---\n" + node1_->Log();
  ASSERT_EQ(node1_incidents.size(), 1U) << logs;
  ASSERT_EQ(node0_incidents.size(), 1U) << logs;
  const Json& cause = node1_incidents[0];
  EXPECT_EQ(cause["job"]["id"], run_id) << cause.dump(1);
  EXPECT_NE(cause.value("summary", "").find("ValueError: bad batch at step 5"), std::string::npos)
      << cause.dump(1);
  EXPECT_EQ(cause.value("first_failing_rank", -1), 3) << cause.dump(1);
  // node0's incident is about its ranks' consequence, and says whose failure it follows.
  const Json& consequence = node0_incidents[0];
  EXPECT_EQ(consequence["job"]["id"], run_id) << consequence.dump(1);
  EXPECT_EQ(consequence.value("summary", "").find("ValueError"), std::string::npos)
      << consequence.dump(1);
  // One answer for the job: node1's rank 3 and its ValueError, from either node's view. The
  // suspects come with node1's bundle: its capture (the ranks' stacks) may take a while on a
  // loaded machine.
  RunResult merged;
  WaitUntil(
      [&] {
        merged = RunBinary({TrainwatchBinary(), "job", run_id, "--shared-dir", Dir("shared")});
        return merged.out.find("suspect    node1") != std::string::npos;
      },
      60s);
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  EXPECT_NE(merged.out.find("first      node1 rank 3 at "), std::string::npos) << merged.out;
  EXPECT_NE(merged.out.find("ValueError: bad batch at step 5"), std::string::npos) << merged.out;
  EXPECT_NE(merged.out.find("verdict    cause application, action inspect (from node1: "),
            std::string::npos)
      << merged.out;
  // The one suspect is rank 3: the ranks that exited on its account are none.
  EXPECT_NE(merged.out.find("suspect    node1 rank 3: "), std::string::npos)
      << merged.out << ReadFile(Dir("state1/incidents.jsonl")) << node1_->Log();
  EXPECT_EQ(merged.out.find("suspect    node0"), std::string::npos) << merged.out;
  EXPECT_EQ(merged.out.find("suspect    node1 rank 2"), std::string::npos) << merged.out;
  // node0's ranks' consequences do not make it first, whichever node wrote earlier.
  EXPECT_EQ(merged.out.find("first      node0"), std::string::npos) << merged.out;
  const RunResult listed = RunBinary({TrainwatchBinary(), "job", "--shared-dir", Dir("shared")});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find(run_id + ": 2 incidents from 2 nodes, first on node1"),
            std::string::npos)
      << listed.out;
  std::printf("%s", merged.out.c_str());
  job.node0->KillGroup();
  job.node1->KillGroup();
}

// Issue 31, item 4: a whole node slower than the job's other. From step 60 each of node1's
// ranks computes 100 ms more a step (its CPUs throttled, its devices slow); rank 0, on node0,
// prints the steps. node0's daemon tells the slowdown from the pace and samples its ranks
// waiting for node1's; node1 captures for it without stopping a rank, its ranks waiting
// least; `trainwatch job` names node1.
constexpr const char* kFastPace =
    "  - id: test.slow\n"
    "    kind: slow\n"
    "    tags: [train]\n"
    "    description: 1.5 times slower over 3s than over the 6s before\n"
    "    pace: {slower_by: 1.5, for: 3s, baseline: 6s}\n";

TEST_F(ClusterTest, AWholeNodeSlowerThanTheOthersIsNamed) {
  if (!HavePyTorch()) {
    GTEST_SKIP() << kNoPyTorch;
  }
  // No rank crashes here (the last --crash-rank given counts).
  TwoNodeJob job = StartTwoNodeJob({"--crash-rank", "-1", "--slow-after", "60", "--slow-ms", "100"},
                                   {"--print-steps"}, kFastPace);
  const std::string& run_id = job.run_id;
  std::vector<cluster::PeerRecord> records;
  const auto sampled_on_both = [&] {
    records.clear();
    std::error_code error;
    for (const auto& entry :
         fs::directory_iterator(Dir("shared/jobs/" + cluster::JobDirName(run_id)), error)) {
      if (Result<cluster::PeerRecord> record = cluster::ReadPeerRecordFile(entry.path());
          record && record->waiting) {
        records.push_back(*record);
      }
    }
    return records.size() >= 2;
  };
  ASSERT_TRUE(WaitUntil(sampled_on_both, 90s)) << daemon_->Log() << "\n--- node1 ---\n"
                                               << node1_->Log() << ReadFile(Dir("logs/ranks.log"));
  for (const cluster::PeerRecord& record : records) {
    std::printf("%s: %s, %d of %d samples waiting for peers over %d ranks\n", record.node.c_str(),
                record.kind.c_str(), record.waiting->peer_waits, record.waiting->samples,
                record.waiting->ranks);
  }
  const RunResult merged =
      RunBinary({TrainwatchBinary(), "job", run_id, "--shared-dir", Dir("shared")});
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  std::printf("%s", merged.out.c_str());
  EXPECT_NE(merged.out.find("slow node  node1: its ranks wait for their peers least ("),
            std::string::npos)
      << merged.out << daemon_->Log() << "\n--- node1 ---\n"
      << node1_->Log();
  // node1's capture for it is no failure of its own.
  EXPECT_NE(merged.out.find("first      node0 at "), std::string::npos) << merged.out;
  EXPECT_EQ(merged.out.find("either may have failed first"), std::string::npos) << merged.out;
  // node1 captured for node0's slow incident, stopping none of its ranks: a slow job runs on.
  const std::vector<Json> node1_incidents = ReadIncidents(Dir("state1"));
  ASSERT_FALSE(node1_incidents.empty());
  EXPECT_EQ(node1_incidents[0]["kind"], "peer") << node1_incidents[0].dump(1);
  std::string bundle;
  for (const cluster::PeerRecord& record : records) {
    if (record.node == "node1") {
      bundle = record.bundle;
    }
  }
  ASSERT_FALSE(bundle.empty()) << node1_->Log();
  fs::create_directories(Dir("unpacked"));
  ASSERT_EQ(std::system(("tar --zstd -xf '" + bundle + "' -C '" + Dir("unpacked") + "'").c_str()),
            0);
  const Json manifest = Json::parse(ReadFile(Dir("unpacked/manifest.json")));
  ASSERT_FALSE(manifest["ranks"]["ranks"].empty()) << manifest["ranks"].dump(1);
  for (const Json& rank : manifest["ranks"]["ranks"]) {
    EXPECT_EQ(rank["paused_seconds"], 0) << rank.dump(1);
  }
  job.node0->KillGroup();
  job.node1->KillGroup();
}

// Three nodes sharing a directory; in three attempts in a row node1 prints the job's failure
// (not the job's own error) and the others only suffer it: node1's third incident says
// exclude_node (the retry policy, from node1's attempts and the others' records), the others'
// never do, `trainwatch job` counts the attempts, and node1's node verdict is CRITICAL.
TEST_F(ClusterTest, TheNodeFirstToFailThreeAttemptsInARowIsExcluded) {
  const std::string rules =
      "  - id: test.infra\n"
      "    kind: crash\n"
      "    cause: infrastructure\n"
      "    action: retry\n"
      "    tags: [train]\n"
      "    description: A failure that is not the job's own\n"
      "    pattern: 'INFRA DOWN \\d+'\n"
      "    examples: {fires: ['INFRA DOWN 1'], quiet: ['ok']}\n"
      "  - id: test.peer_closed\n"
      "    kind: crash\n"
      "    cause: unknown\n"
      "    action: retry\n"
      "    role: consequence\n"
      "    tags: [train]\n"
      "    description: What a peer's failure does to a rank\n"
      "    pattern: 'PEER CLOSED \\d+'\n"
      "    examples: {fires: ['PEER CLOSED 1'], quiet: ['ok']}\n";
  StartNodes(
      "cluster: {node_name: node0, job_id: jobA, shared_dir: shared, poll_interval: 500ms, "
      "peer_capture: false}\n",
      "0s", "", rules, /*follow_up=*/"0s");  // each attempt's consequence an incident of its own
  std::string text = ReadFile(Dir("node1.yaml"));
  for (const auto& [from, to] :
       {std::pair<std::string, std::string>{"state_dir: state1", "state_dir: state2"},
        {"logs1/**/*.log", "logs2/**/*.log"},
        {"node_name: node1", "node_name: node2"}}) {
    const std::size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  }
  std::ofstream(Dir("node2.yaml")) << text;
  fs::create_directories(Dir("logs2"));
  DaemonProcess node2({"daemon", "--config", Dir("node2.yaml")}, Dir("node2.log"));
  ASSERT_TRUE(node2.WaitReady(Dir("state2"))) << node2.Log();

  for (int attempt = 1; attempt <= 3; ++attempt) {
    const std::string n = std::to_string(attempt);
    Append(Dir("logs1/job.log"), "[rank4]: INFRA DOWN " + n + "\n");
    ASSERT_TRUE(
        WaitUntil([&] { return ReadIncidents(Dir("state1")).size() == std::size_t(attempt); }, 10s))
        << node1_->Log();
    std::this_thread::sleep_for(1s);  // the others suffer it after, and their records follow
    Append(Dir("logs/job.log"), "[rank0]: PEER CLOSED " + n + "\n");
    Append(Dir("logs2/job.log"), "[rank8]: PEER CLOSED " + n + "\n");
    ASSERT_TRUE(WaitUntil(
        [&] {
          return ReadIncidents(state()).size() == std::size_t(attempt) &&
                 ReadIncidents(Dir("state2")).size() == std::size_t(attempt);
        },
        10s))
        << daemon_->Log() << node2.Log();
    std::this_thread::sleep_for(1500ms);  // every node reads the others' records
  }
  const std::vector<Json> first = ReadIncidents(Dir("state1"));
  EXPECT_EQ(first[0]["action"], "retry") << first[0].dump(1);
  EXPECT_EQ(first[1]["action"], "retry") << first[1].dump(1);
  EXPECT_EQ(first[2]["action"], "exclude_node") << first[2].dump(1);
  EXPECT_EQ(first[2]["attempt"]["number"], 3);
  EXPECT_TRUE(first[2]["attempt"]["failed_first"].get<bool>());
  EXPECT_NE(first[2]["verdict"].get<std::string>().find(
                "this node failed first in attempts 1, 2 and 3 in a row"),
            std::string::npos)
      << first[2].dump(1);
  for (const std::string& state : {state(), Dir("state2")}) {
    for (const Json& incident : ReadIncidents(state)) {
      EXPECT_NE(incident["action"], "exclude_node") << incident.dump(1);
      EXPECT_FALSE(incident["attempt"]["failed_first"].get<bool>()) << incident.dump(1);
    }
  }
  ASSERT_TRUE(WaitUntil([&] { return Published().size() == 9; }, 20s));
  const RunResult merged =
      RunBinary({TrainwatchBinary(), "job", "jobA", "--shared-dir", Dir("shared")});
  EXPECT_NE(merged.out.find("attempts   3 failed on node1, the latest at no step; this node "
                            "failed first in attempts 1, 2 and 3"),
            std::string::npos)
      << merged.out;
  const RunResult verdict = RunBinary(
      {TrainwatchBinary(), "node-verdict", "--config", Dir("node1.yaml"), "--no-devices"});
  EXPECT_EQ(verdict.exit_code, 2) << verdict.out << verdict.err;
  EXPECT_NE(verdict.out.find("excluded: this node failed first"), std::string::npos) << verdict.out;
  const RunResult other =
      RunBinary({TrainwatchBinary(), "node-verdict", "--config", config(), "--no-devices"});
  EXPECT_EQ(other.exit_code, 0) << other.out << other.err;
}

TEST_F(ClusterTest, ThroughSshfsPeersSeeEachOtherAndADeadMountLosesNoIncident) {
  if (!CanMountSshfs()) {
    GTEST_SKIP() << "needs root, /dev/fuse, sshfs and /usr/lib/openssh/sftp-server "
                    "(apt-get install sshfs openssh-sftp-server)";
  }
  fs::create_directories(Dir("export/jobs"));  // the server's side, made once
  auto mount0 = std::make_unique<SshfsMount>(Dir("export"), Dir("mnt0"), Dir(""));
  SshfsMount mount1(Dir("export"), Dir("mnt1"), Dir(""));
  ASSERT_TRUE(mount0->mounted() && mount1.mounted()) << ReadFile("/proc/mounts");
  StartNodes("cluster: {node_name: node0, job_id: jobA, shared_dir: mnt0, poll_interval: 1s}\n",
             "5m", Dir("mnt1"));
  // node1's incident goes through its mount; node0 sees it through its own and captures.
  Append(Dir("logs1/job.log"), "[rank3]: MARK 1 FIRE\n");
  Json peer;
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (const Json& incident : ReadIncidents(state())) {
          if (incident["kind"] == "peer") {
            peer = incident;
            return true;
          }
        }
        return false;
      },
      30s))
      << daemon_->Log() << node1_->Log();
  const Json failure = ReadIncidents(Dir("state1")).at(0);
  EXPECT_EQ(peer["peer"]["incident"], failure["id"]);
  const double seen_after = static_cast<double>(peer["opened_ms"].get<std::int64_t>() -
                                                failure["opened_ms"].get<std::int64_t>()) /
                            1000;
  RecordProperty("sshfs_first_firing_to_peer_incident_seconds", std::to_string(seen_after));
  std::printf("through sshfs: node1's first firing line to node0's peer incident: %.2f s\n",
              seen_after);
  EXPECT_TRUE(
      fs::exists(Dir("export/jobs/jobA/" + failure["id"].get<std::string>() + "@node1.json")));

  // node0's mount dies mid-run: local detection goes on, and its incident waits, then lands.
  mount0->KillKeepingTheDeadMount();
  Append(Dir("logs/job.log"), "[rank0]: MARK 2 FIRE\n");
  ASSERT_TRUE(WaitUntil(
      [&] {
        const std::vector<Json> incidents = ReadIncidents(state());
        return !incidents.empty() && incidents.back()["kind"] == "crash";
      },
      20s))
      << daemon_->Log();
  const std::string own = ReadIncidents(state()).back()["id"];
  ASSERT_TRUE(WaitUntil([&] { return OutboxHolds(Dir("state/outbox/jobA")); }, 10s));
  ASSERT_TRUE(WaitUntil(
      [&] { return !daemon_->Status(state())["shared"].value("error", "").empty(); }, 20s))
      << daemon_->Status(state()).dump(1);
  EXPECT_NE(daemon_->Log().find("cannot publish to the shared directory"), std::string::npos);
  mount0.reset();  // unmounted
  mount0 = std::make_unique<SshfsMount>(Dir("export"), Dir("mnt0"), Dir(""));
  ASSERT_TRUE(mount0->mounted());
  ASSERT_TRUE(
      WaitUntil([&] { return fs::exists(Dir("export/jobs/jobA/" + own + "@node0.json")); }, 90s))
      << daemon_->Log();
  EXPECT_TRUE(WaitUntil([&] { return !OutboxHolds(Dir("state/outbox/jobA")); }, 10s));
  daemon_->Signal(SIGTERM);
  EXPECT_EQ(daemon_->Wait(), 0) << daemon_->Log();
}

}  // namespace
}  // namespace trainwatch::testing

namespace trainwatch::testing {
namespace {

// Security round 3, item 6: any user can set a job id variable, so a record naming this node's
// job is acted on (its ranks paused and read) only when its job runs as the same user there
// as here. A forged record (another uid) is logged and left; an honest one is captured for.
TEST_F(DaemonTest, APeerRecordOfAnotherUserIsNotActedOn) {
  WriteConfig({.cooldown = "0s",
               .capture = "capture: {commands: [], habana_logs: none}\n"
                          "cluster: {node_name: node0, shared_dir: shared, poll_interval: 1s}\n"});
  std::filesystem::create_directories(Dir("shared/jobs"));
  StartDaemon();
  // The job here: a writer of a watched log whose environment names jobA, run as this uid.
  ::setenv("TRAINWATCH_JOB_ID", "jobA", 1);
  const auto writer = DaemonProcess::Program(
      {"/bin/sh", "-c", "while :; do echo step; sleep 0.2; done"}, Dir("logs/job.log"));
  ::unsetenv("TRAINWATCH_JOB_ID");
  ASSERT_TRUE(WaitUntil(
      [&] {
        const Json shared = daemon_->Status(state())["shared"];
        return shared.is_object() && shared["watched_jobs"] == Json::array({"jobA"});
      },
      20s))
      << daemon_->Log();
  auto publish = [&](const std::string& id, const std::string& node, int uid) {
    cluster::PeerRecord record;
    record.job_id = "jobA";
    record.node = node;
    record.incident_id = id;
    record.kind = "crash";
    record.summary = "RuntimeError: boom";
    record.cause = "hardware";
    record.uid = uid;
    record.opened_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
    std::filesystem::create_directories(Dir("shared/jobs/jobA"));
    std::ofstream(Dir("shared/jobs/jobA/" + cluster::PeerFileName(id, node)))
        << cluster::PeerRecordJson(record);
  };
  auto peers = [&] {
    int count = 0;
    for (const Json& incident : ReadIncidents(state())) {
      count += incident["kind"] == "peer" ? 1 : 0;
    }
    return count;
  };
  publish("forged", "node9", static_cast<int>(::geteuid()) + 4242);
  ASSERT_TRUE(WaitUntil(
      [&] { return daemon_->Log().find("another user's claim") != std::string::npos; }, 15s))
      << daemon_->Log();
  EXPECT_EQ(peers(), 0) << daemon_->Log();
  publish("honest", "node8", static_cast<int>(::geteuid()));
  EXPECT_TRUE(WaitUntil([&] { return peers() == 1; }, 20s)) << daemon_->Log();
}

}  // namespace
}  // namespace trainwatch::testing

namespace trainwatch::testing {
namespace {

// Security round 3, item 6, on one node: a line in another user's log (uid 4242) does not get
// this node's other processes (root's job writing its own log) paused, ptraced or bundled.
TEST_F(DaemonTest, AnotherUsersLogLineCapturesNoneOfTheOtherJobsProcesses) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root (a log of another user)";
  }
  WriteConfig({.settle = "0s",
               .cooldown = "0s",
               .capture = "capture: {commands: [], habana_logs: none}\n"});
  StartDaemon();
  ::setenv("RANK", "0", 1);
  const auto job = DaemonProcess::Program(
      {"/bin/sh", "-c", "while :; do echo step; sleep 0.2; done"}, Dir("logs/job.log"));
  ::unsetenv("RANK");
  std::this_thread::sleep_for(2s);  // its writer known
  const std::string theirs = Dir("logs/theirs.log");
  std::ofstream(theirs) << "step 1\n";
  ASSERT_EQ(::chown(theirs.c_str(), 4242, 4242), 0);
  std::this_thread::sleep_for(1s);  // followed, as uid 4242's
  std::ofstream(theirs, std::ios::app) << "MARK 1 FIRE\n";
  EXPECT_TRUE(WaitUntil(
      [&] {
        return daemon_->Log().find("process(es) of other users (uid 0) left out") !=
               std::string::npos;
      },
      20s))
      << daemon_->Log();
  // Its bundle holds no rank: the only rank here (RANK=0) is root's job's.
  ASSERT_TRUE(WaitUntil([&] { return !BundleRecords().empty(); }, 30s)) << daemon_->Log();
  const Json bundle = BundleRecords().front();
  EXPECT_TRUE(bundle["bundle"].is_string()) << bundle.dump(1);
  EXPECT_EQ(bundle.value("ranks", "").find("rank 0"), std::string::npos) << bundle.dump(1);
}

}  // namespace
}  // namespace trainwatch::testing
