// The job across nodes through a shared directory, with the real binary: two daemons with
// their own node names, state and logs, sharing one directory; each publishes its incidents
// there, `trainwatch job` merges them, and a shared directory that goes away loses nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "integration/daemon_fixture.h"
#include "support/file_text.h"
#include "support/run_binary.h"

namespace trainwatch::testing {
namespace {

namespace fs = std::filesystem;

class ClusterTest : public DaemonTest {
 protected:
  // node0 is the fixture's daemon (logs/, state/); node1 watches logs1/ into state1/.
  void StartNodes() {
    WriteConfig({.cooldown = "0s",
                 .capture = "capture: {commands: [], habana_logs: none}\n"
                            "cluster: {node_name: node0, job_id: jobA, shared_dir: shared}\n"});
    std::string text = ReadFile(config());
    for (const auto& [from, to] :
         {std::pair<std::string, std::string>{"state_dir: state", "state_dir: state1"},
          {"logs/**/*.log", "logs1/**/*.log"},
          {"node_name: node0", "node_name: node1"}}) {
      const std::size_t at = text.find(from);
      ASSERT_NE(at, std::string::npos) << from;
      text.replace(at, from.size(), to);
    }
    std::ofstream(Dir("node1.yaml")) << text;
    fs::create_directories(Dir("logs1"));
    fs::create_directories(Dir("shared/jobs"));  // made once on the shared file system
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
  std::unique_ptr<DaemonProcess> node1_;
};

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
  ASSERT_TRUE(WaitUntil([&] { return !fs::is_empty(Dir("state/outbox/jobA")); }, 10s));
  EXPECT_NE(daemon_->Log().find("cannot publish to the shared directory"), std::string::npos)
      << daemon_->Log();
  EXPECT_FALSE(fs::exists(Dir("shared"))) << "nothing made where the mount should be";
  fs::rename(Dir("shared.gone"), Dir("shared"));
  // Retried with backoff (2 s, then 4 s, ...): lands, with its bundle.
  ASSERT_TRUE(WaitUntil([&] { return AllHaveBundles(1); }, 30s)) << daemon_->Log();
  EXPECT_TRUE(WaitUntil([&] { return fs::is_empty(Dir("state/outbox/jobA")); }, 10s));
  EXPECT_NE(daemon_->Log().find("takes records again"), std::string::npos) << daemon_->Log();
  const Json shared = daemon_->Status(state())["shared"];
  EXPECT_EQ(shared["pending"], 0) << shared.dump(1);
  EXPECT_EQ(shared["error"], "");
  EXPECT_GE(shared["published"].get<int>(), 1);
}

}  // namespace
}  // namespace trainwatch::testing
