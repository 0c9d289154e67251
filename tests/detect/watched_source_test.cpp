// WatchedSource on a FakeEnv: a writer that vanishes mid-bar, a stall, and the exit of a
// wrapped command, stepped through fake time with scripted processes.
#include "detect/watched_source.h"

#include <gtest/gtest.h>
#include <signal.h>

#include "rules/rule_loader.h"
#include "support/fake_env.h"

namespace trainwatch::detect {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeEnv;

constexpr const char* kRules = R"(rules:
  - id: t.stall
    kind: hang
    tags: [train]
    description: stall
    progress: {stall_after: 60s}
  - id: t.killed
    kind: crash
    tags: [train]
    description: killed
    exit: {signals: [SIGKILL]}
)";

std::string Bar(int count) {
  return "Epoch 0:  " + std::to_string(count * 100 / 40) + "%|####      | " +
         std::to_string(count) + "/40 [00:03<00:05,  4.6it/s]\r";
}

class WatchedSourceTest : public ::testing::Test {
 protected:
  WatchedSourceTest() {
    rules::LoadedRules loaded;
    rules::LoadRuleText(kRules, "t.yaml", loaded);
    EXPECT_TRUE(loaded.errors.empty()) << FormatDiagnostic(loaded.errors.front());
    std::vector<Diagnostic> notes;
    Result<rules::SourceRules> built =
        rules::BuildSourceRules(loaded.rules, {"train"}, "train", "", notes);
    EXPECT_TRUE(built.ok());
    config::SourceConfig config;
    config.name = "train";
    config.tags = {"train"};
    config.paths = {"/logs/*.log"};
    source_ = std::make_unique<WatchedSource>(config, std::move(*built));
    env_.files().MakeDirs("/logs");
  }

  WatchedSource::Outlet Outlet() {
    WatchedSource::Outlet outlet;
    outlet.fired = [this](std::vector<Firing>& firings, StreamDetector*) {
      for (const Firing& firing : firings) {
        fired_.push_back(firing.event.rule_id + ": " + firing.event.summary);
      }
    };
    outlet.new_file = [] {};
    outlet.unknown_writers = [] {};
    outlet.traceback_open = [] {};
    outlet.read = [] {};
    outlet.suppress_fired = [](StreamDetector&, const source::FileTail&) {};
    return outlet;
  }
  void Start() {
    source_->Start(env_, Outlet(), 5, {});
    env_.RunUntilIdle();
  }
  StreamDetector& OnlyStream() { return *source_->file_streams().begin()->second; }

  FakeEnv env_;
  std::unique_ptr<WatchedSource> source_;
  std::vector<std::string> fired_;
};

TEST_F(WatchedSourceTest, AWriterThatVanishesMidBarIsACrash) {
  Start();
  env_.files().Append("/logs/rank0.log", Bar(4));
  env_.Advance(milliseconds(20));  // the rescan a new name sets off
  ASSERT_EQ(source_->file_streams().size(), 1u);
  env_.live_pids.insert(4242);
  OnlyStream().set_writers({source::WriterProcess{4242, "python3"}});
  env_.Advance(seconds(1));
  env_.files().Append("/logs/rank0.log", Bar(15));
  env_.RunUntilIdle();
  source_->CheckWriters(env_.SteadyNow());
  EXPECT_TRUE(fired_.empty()) << "its writer lives";
  env_.live_pids.erase(4242);  // SIGKILLed: the OOM killer
  source_->CheckWriters(env_.SteadyNow());
  ASSERT_EQ(fired_.size(), 1u);
  EXPECT_NE(fired_[0].find("(python3) stopped with 'Epoch 0' at 15/40"), std::string::npos)
      << fired_[0];
  EXPECT_TRUE(OnlyStream().writers().empty());
  env_.Advance(seconds(120));
  source_->CheckTime(env_.SteadyNow());
  EXPECT_EQ(fired_.size(), 1u) << "a dead job's bar is no stall";
}

TEST_F(WatchedSourceTest, ABarThatStopsMovingIsAStallAfterItsTime) {
  Start();
  env_.files().Append("/logs/rank0.log", Bar(4));
  env_.RunUntilIdle();
  env_.Advance(seconds(1));
  env_.files().Append("/logs/rank0.log", Bar(5));
  env_.RunUntilIdle();
  env_.Advance(seconds(59));
  source_->CheckTime(env_.SteadyNow());
  EXPECT_TRUE(fired_.empty());
  env_.Advance(seconds(1));
  source_->CheckTime(env_.SteadyNow());
  ASSERT_EQ(fired_.size(), 1u);
  EXPECT_EQ(fired_[0].rfind("t.stall: ", 0), 0u) << fired_[0];
}

TEST_F(WatchedSourceTest, TheWrappedCommandsEndIsJudgedByTheExitRules) {
  ASSERT_TRUE(source_->StartWrap(env_, Outlet(), 5, 4242, "python3"));
  source_->OnWrapEnded(source::ChildEnd{0, SIGTERM}, "process 4242 (python3)");
  EXPECT_TRUE(fired_.empty()) << "SIGTERM is not among the rule's signals";
  source_->OnWrapEnded(source::ChildEnd{0, SIGKILL}, "process 4242 (python3)");
  ASSERT_EQ(fired_.size(), 1u);
  EXPECT_EQ(fired_[0].rfind("t.killed: ", 0), 0u) << fired_[0];
}

}  // namespace
}  // namespace trainwatch::detect
