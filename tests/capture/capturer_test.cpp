// The Capturer's sequencing on a FakeEnv: commands and in-process collectors at once, the
// bundle only when both are done, one capture at a time with a few waiting and the rest
// dropped (and said so), a collector that never answers abandoned on time while the bundle
// still lands, and an abort. The command collectors are scripted children; the in-process
// ones and the bundle writer are real, on a temporary directory.
#include "capture/capturer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "bundle/bundle_reader.h"
#include "support/fake_env.h"
#include "support/temp_dir.h"

namespace trainwatch::capture {
namespace {

using std::chrono::milliseconds;
using testing::FakeEnv;

class CapturerTest : public ::testing::Test {
 protected:
  CapturerTest() {
    config_.bundles_dir = (dir_.path() / "bundles").string();
    config_.habana_logs = (dir_.path() / "no-habana-logs").string();
    config_.min_free_percent = 0;
    config::CommandConfig command;
    command.name = "hl-smi-q";
    command.argv = {"hl-smi", "-q"};
    command.timeout = milliseconds(3000);
    command.as = "device/hl-smi-q.txt";
    config_.commands = {command};
    capturer_ = std::make_unique<Capturer>(env_, config_);
  }

  // Captures an incident `id`; its outcome lands in outcomes_[id].
  void Capture(const std::string& id) {
    CaptureRequest request;
    request.incident.id = id;
    request.incident.kind = rules::RuleKind::kHang;
    request.incident.summary = "no progress for 300s";
    request.incident.opened = env_.WallNow();
    capturer_->Capture(std::move(request), [this, id](const CaptureOutcome& outcome) {
      outcomes_[id] = outcome;
      order_.push_back(id);
    });
  }
  FakeEnv::Child& Child(std::size_t i) { return *env_.children().at(i); }
  void Answer(std::size_t i) {
    env_.Output(Child(i), "Device 0: AIP (1) ok\n");
    env_.Exit(Child(i), 0);
  }

  ::trainwatch::testing::TempDir dir_;
  FakeEnv env_;
  config::CaptureConfig config_;
  std::unique_ptr<Capturer> capturer_;
  std::map<std::string, CaptureOutcome> outcomes_;
  std::vector<std::string> order_;
};

TEST_F(CapturerTest, TheBundleWaitsForTheCommandsAndTheInProcessCollectors) {
  env_.HoldPool();  // the in-process collectors take their time
  Capture("i1");
  EXPECT_TRUE(env_.children().empty()) << "the job's processes are looked up on the pool first";
  env_.StepPool();
  ASSERT_EQ(env_.children().size(), 1u) << "then the commands start at once";
  env_.Advance(milliseconds(400));
  Answer(0);
  env_.RunUntilIdle();
  EXPECT_TRUE(outcomes_.empty()) << "the in-process collectors are not done";
  env_.ReleasePool();
  ASSERT_EQ(outcomes_.count("i1"), 1u);
  const CaptureOutcome& outcome = outcomes_["i1"];
  EXPECT_TRUE(outcome.error.empty()) << outcome.error;
  EXPECT_TRUE(std::filesystem::is_regular_file(outcome.path)) << outcome.path;
  EXPECT_GT(outcome.bytes, 0u);
  EXPECT_TRUE(outcome.timed_out.empty());
  EXPECT_DOUBLE_EQ(outcome.capture_seconds, 0.4);
}

TEST_F(CapturerTest, OverlappingIncidentsAreCapturedOneAfterTheOther) {
  Capture("i1");
  Capture("i2");
  env_.RunUntilIdle();
  ASSERT_EQ(env_.children().size(), 1u) << "i2 waits for i1";
  Answer(0);
  env_.RunUntilIdle();
  EXPECT_EQ(order_, std::vector<std::string>{"i1"});
  ASSERT_EQ(env_.children().size(), 2u) << "i2 starts when i1's bundle is written";
  Answer(1);
  env_.RunUntilIdle();
  EXPECT_EQ(order_, (std::vector<std::string>{"i1", "i2"}));
  EXPECT_NE(outcomes_["i1"].path, outcomes_["i2"].path);
  EXPECT_TRUE(std::filesystem::is_regular_file(outcomes_["i2"].path));
}

TEST_F(CapturerTest, AStormBeyondTheQueueIsDroppedAndSaysSo) {
  Capture("running");
  for (std::size_t i = 0; i < Capturer::kMaxQueued; ++i) {
    Capture("waiting" + std::to_string(i));
  }
  Capture("dropped");
  ASSERT_EQ(outcomes_.count("dropped"), 1u) << "answered at once";
  env_.RunUntilIdle();
  EXPECT_TRUE(outcomes_["dropped"].path.empty());
  EXPECT_NE(outcomes_["dropped"].error.find("4 captures already wait"), std::string::npos)
      << outcomes_["dropped"].error;
  for (std::size_t i = 0; i <= Capturer::kMaxQueued; ++i) {
    Answer(i);
    env_.RunUntilIdle();
  }
  EXPECT_EQ(order_.size(), Capturer::kMaxQueued + 2);
  EXPECT_EQ(order_.back(), "waiting3");
}

TEST_F(CapturerTest, ACollectorThatNeverAnswersIsAbandonedAndTheBundleStillLands) {
  env_.signals_kill = false;  // hl-smi stuck on a wedged device
  Capture("i1");
  env_.Advance(milliseconds(3000) + collect::CommandRunner::kTermGrace);
  EXPECT_TRUE(outcomes_.empty());
  // It did not wait for the stuck tool: a second in, the early bundle was written.
  std::vector<std::string> early;
  for (const auto& entry : std::filesystem::directory_iterator(config_.bundles_dir)) {
    early.push_back(entry.path().string());
  }
  ASSERT_EQ(early.size(), 1u);
  const Result<std::string> manifest = bundle::ReadManifest(early[0]);
  ASSERT_TRUE(manifest) << manifest.error().message;
  EXPECT_EQ(nlohmann::json::parse(*manifest).value("early", ""),
            "written while the tools' outputs were still being taken; the complete bundle "
            "replaces this one under the same name");
  env_.Advance(collect::CommandRunner::kKillGrace);
  ASSERT_EQ(outcomes_.count("i1"), 1u);
  const CaptureOutcome& outcome = outcomes_["i1"];
  EXPECT_TRUE(std::filesystem::is_regular_file(outcome.path)) << outcome.error;
  EXPECT_EQ(outcome.timed_out, std::vector<std::string>{"hl-smi-q"});
  EXPECT_EQ(outcome.path, early[0]);
  EXPECT_DOUBLE_EQ(outcome.early_since_first_firing, 0) << "no firing line to count from";
  EXPECT_EQ(Child(0).signals, (std::vector<int>{SIGTERM, SIGKILL}));
  EXPECT_DOUBLE_EQ(outcome.capture_seconds, 6.0);

  // The next incident does not wait on it again: its tool is skipped while it lives.
  Capture("i2");
  env_.RunUntilIdle();
  EXPECT_EQ(env_.children().size(), 1u);
  ASSERT_EQ(outcomes_.count("i2"), 1u);
  EXPECT_TRUE(std::filesystem::is_regular_file(outcomes_["i2"].path));
}

// Security round 3, item 4: a part of a capture wedged where no deadline reaches (its
// in-process collectors on a hung file system: here, pool work that never runs) is given up
// at kCaptureDeadline with what it has; the capture queued behind it runs; and the wedged work,
// when it returns at last, changes nothing.
TEST_F(CapturerTest, AWedgedCaptureIsGivenUpAtItsDeadlineAndTheNextOneRuns) {
  env_.HoldPool();
  Capture("wedged");
  Capture("next");
  env_.StepPool();  // the job's processes are known; its in-process collectors never return
  ASSERT_EQ(env_.children().size(), 1u);
  Answer(0);
  env_.RunUntilIdle();
  EXPECT_TRUE(outcomes_.empty());
  env_.Advance(Capturer::kCaptureDeadline);
  ASSERT_EQ(outcomes_.count("wedged"), 1u);
  EXPECT_NE(outcomes_["wedged"].error.find("abandoned after 600 s: the in-process collectors"),
            std::string::npos)
      << outcomes_["wedged"].error;
  EXPECT_TRUE(outcomes_["wedged"].path.empty());
  // The wedged work returns at last (run first, in order), then the next capture's: the
  // former changes nothing.
  env_.ReleasePool();
  ASSERT_EQ(env_.children().size(), 2u) << "the next capture runs its tools";
  Answer(1);
  env_.RunUntilIdle();
  ASSERT_EQ(outcomes_.count("next"), 1u);
  EXPECT_TRUE(outcomes_["next"].error.empty()) << outcomes_["next"].error;
  EXPECT_TRUE(std::filesystem::is_regular_file(outcomes_["next"].path));
  EXPECT_EQ(order_, (std::vector<std::string>{"wedged", "next"}));
}

TEST_F(CapturerTest, AnAbortKillsTheCommandsAndWritesNothing) {
  env_.HoldPool();
  Capture("i1");
  Capture("i2");
  env_.StepPool();
  capturer_->Abort();
  EXPECT_EQ(Child(0).signals, std::vector<int>{SIGKILL});
  env_.ReleasePool();  // the in-process collectors finish on their thread, unseen
  env_.Advance(milliseconds(10000));
  EXPECT_EQ(env_.children().size(), 1u) << "i2 never starts";
  EXPECT_TRUE(order_.empty()) << "the daemon is stopping: no one is told";
  std::error_code error;
  EXPECT_TRUE(std::filesystem::is_empty(config_.bundles_dir, error)) << "no bundle written";
}

TEST_F(CapturerTest, AnAbortWhileTheJobsProcessesAreLookedUpStartsNothing) {
  env_.HoldPool();
  Capture("i1");
  capturer_->Abort();
  env_.ReleasePool();
  env_.Advance(milliseconds(10000));
  EXPECT_TRUE(env_.children().empty());
  EXPECT_TRUE(order_.empty());
  std::error_code error;
  EXPECT_TRUE(!std::filesystem::exists(config_.bundles_dir, error) ||
              std::filesystem::is_empty(config_.bundles_dir, error));
}

// The ranks' stacks take longest (a debugger on every rank): what else there is lands first,
// as an early bundle under the final name, which the complete bundle then replaces.
TEST_F(CapturerTest, AnEarlyBundleLandsWhileTheRanksStacksAreTaken) {
  CaptureRequest request;
  request.incident.id = "i1";
  request.incident.kind = rules::RuleKind::kHang;
  request.incident.opened = env_.WallNow();
  detect::Firing firing;
  firing.time = env_.WallNow();
  firing.event.kind = rules::RuleKind::kHang;
  request.incident.firings.push_back(firing);
  request.pids = {getpid()};  // a live process: its stacks are taken (by scripted children)
  capturer_->Capture(std::move(request),
                     [this](const CaptureOutcome& outcome) { outcomes_["i1"] = outcome; });
  env_.RunUntilIdle();
  ASSERT_GT(env_.children().size(), 1u) << "the commands and the ranks' tools run";
  env_.Advance(milliseconds(100));
  Answer(0);  // hl-smi -q; the ranks' tools are still at work
  env_.RunUntilIdle();
  EXPECT_TRUE(outcomes_.empty());
  std::vector<std::string> bundles;
  for (const auto& entry : std::filesystem::directory_iterator(config_.bundles_dir)) {
    bundles.push_back(entry.path().string());
  }
  ASSERT_EQ(bundles.size(), 1u) << "the early bundle";
  const Result<std::string> early = bundle::ReadManifest(bundles[0]);
  ASSERT_TRUE(early) << early.error().message;
  const auto early_json = nlohmann::json::parse(*early);
  EXPECT_TRUE(early_json.contains("early")) << *early;
  EXPECT_FALSE(early_json.contains("ranks")) << "no stacks yet";
  EXPECT_NE(early->find("device/hl-smi-q.txt"), std::string::npos) << "the tools' outputs";

  // The ranks' tools answer (or fail): the complete bundle replaces the early one.
  for (int turn = 0; turn < 100 && outcomes_.empty(); ++turn) {
    for (const auto& child : env_.children()) {
      if (child->alive) {
        env_.Exit(*child, 1);
      }
    }
    env_.Advance(milliseconds(100));
  }
  ASSERT_EQ(outcomes_.count("i1"), 1u);
  const CaptureOutcome& outcome = outcomes_["i1"];
  EXPECT_TRUE(outcome.error.empty()) << outcome.error;
  EXPECT_EQ(outcome.path, bundles[0]);
  EXPECT_DOUBLE_EQ(outcome.early_since_first_firing, 0.1);
  EXPECT_GT(outcome.since_first_firing, outcome.early_since_first_firing);
  const Result<std::string> complete = bundle::ReadManifest(outcome.path);
  ASSERT_TRUE(complete) << complete.error().message;
  const auto complete_json = nlohmann::json::parse(*complete);
  EXPECT_FALSE(complete_json.contains("early")) << *complete;
  EXPECT_TRUE(complete_json.contains("ranks"));
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator(config_.bundles_dir)) {
    ++files;
  }
  EXPECT_EQ(files, 1u) << "replaced, not added; no partial file left";
}

// The early bundle's second passes while the complete bundle is being written: nothing more is
// started (a second write of the same file would race the first), and the next capture runs.
TEST_F(CapturerTest, TheEarlyWaitEndingDuringTheCompleteWriteStartsNothing) {
  Capture("i1");
  Capture("i2");
  env_.RunUntilIdle();
  env_.HoldPool();
  Answer(0);
  env_.RunUntilIdle();
  EXPECT_EQ(env_.pool_waiting(), 1u) << "the complete bundle";
  env_.Advance(milliseconds(1000));
  EXPECT_EQ(env_.pool_waiting(), 1u) << "no early bundle, no second write";
  env_.ReleasePool();
  env_.RunUntilIdle();
  EXPECT_EQ(order_, std::vector<std::string>{"i1"});
  ASSERT_EQ(env_.children().size(), 2u) << "i2 started";
  Answer(1);
  env_.RunUntilIdle();
  EXPECT_EQ(order_, (std::vector<std::string>{"i1", "i2"}));
  EXPECT_TRUE(outcomes_["i1"].error.empty()) << outcomes_["i1"].error;
  EXPECT_TRUE(std::filesystem::is_regular_file(outcomes_["i2"].path)) << outcomes_["i2"].error;
}

// A daemon that stops while the stacks are taken keeps the early bundle.
TEST_F(CapturerTest, AnAbortAfterTheEarlyBundleKeepsIt) {
  CaptureRequest request;
  request.incident.id = "i1";
  request.incident.kind = rules::RuleKind::kHang;
  request.incident.opened = env_.WallNow();
  request.pids = {getpid()};
  capturer_->Capture(std::move(request),
                     [this](const CaptureOutcome& outcome) { outcomes_["i1"] = outcome; });
  env_.RunUntilIdle();
  Answer(0);
  env_.RunUntilIdle();
  const std::optional<CaptureOutcome> early = capturer_->Abort();
  ASSERT_TRUE(early) << "for the incident's record";
  EXPECT_EQ(early->incident_id, "i1");
  EXPECT_GT(early->bytes, 0u);
  env_.Advance(milliseconds(10000));
  EXPECT_TRUE(outcomes_.empty()) << "the daemon is stopping: no one is told";
  std::vector<std::string> bundles;
  for (const auto& entry : std::filesystem::directory_iterator(config_.bundles_dir)) {
    bundles.push_back(entry.path().filename().string());
  }
  ASSERT_EQ(bundles.size(), 1u);
  EXPECT_TRUE(bundles[0].ends_with(".tar.zst")) << bundles[0];
  EXPECT_EQ(early->path, config_.bundles_dir + "/" + bundles[0]);
}

}  // namespace
}  // namespace trainwatch::capture
