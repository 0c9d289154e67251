// A whole Daemon on the FakeEnv and its fake file system, with a host that has no loop: a log
// line written, the incident recorded, its bundle written, the offsets saved at the stop, and
// the control socket's answers — every step taken by the test, no sleeps.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "app/running_daemon.h"
#include "rules/rule_loader.h"
#include "support/fake_env.h"
#include "support/file_text.h"
#include "support/temp_dir.h"

namespace trainwatch::app {
namespace {

using std::chrono::milliseconds;
using testing::FakeEnv;

// Signals and control requests come from the test; there is no loop, so no kernel log, no
// wrapped command and no HTTP.
class FakeDaemonHost final : public DaemonHost {
 public:
  void WatchSignals(std::function<void(int)> on_signal) override { on_signal_ = on_signal; }
  void StopSignals() override { on_signal_ = nullptr; }
  Status ListenControl(const std::string& path, ops::ControlServer::Handler handler) override {
    control_path = path;
    control_ = std::move(handler);
    return Status::Ok();
  }
  void StopControl(bool /*remove_socket*/) override { control_ = nullptr; }
  uv_loop_t* uv_loop() override { return nullptr; }
  std::unique_ptr<alert::HttpClient> NewHttpClient() override { return nullptr; }
  void CheckAfterStop(std::chrono::milliseconds /*after*/,
                      std::function<void()> /*check*/) override {
    ++stop_checks;
  }
  void ExitNow(int exit_code) override { exited = exit_code; }

  // As kill(1) would; false when the daemon no longer listens.
  bool Signal(int signum) {
    if (!on_signal_) {
      return false;
    }
    on_signal_(signum);
    return true;
  }
  // A control client's request line; false when the socket is closed. `answer` gets the
  // reply when it comes (the status is made partly on the thread pool).
  bool Send(const std::string& request, const std::shared_ptr<std::optional<std::string>>& answer) {
    if (!control_) {
      return false;
    }
    control_(request, [answer](std::string response) { *answer = std::move(response); });
    return true;
  }

  std::string control_path;
  int stop_checks = 0;
  std::optional<int> exited;

 private:
  std::function<void(int)> on_signal_;
  ops::ControlServer::Handler control_;
};

constexpr const char* kRules = R"(rules:
  - id: t.traceback
    kind: crash
    tags: [train]
    description: a Python traceback
    pattern: 'Traceback \(most recent call last\):'
    multiline: python-traceback
    examples:
      fires: ["Traceback (most recent call last):\n  File \"t.py\", line 1, in <module>\nKeyError: 'x'\n"]
      quiet: [step 1]
)";

class DaemonOnFakeEnvTest : public ::testing::Test {
 protected:
  // An empty /proc: no writers to be found, nothing of the machine's read.
  DaemonOnFakeEnvTest() : env_(proc_.path().string()) {
    env_.files().MakeDirs("/logs");
    env_.files().MakeDirs("/state");
    options_.cache_compiled_rules = false;  // the cache would be written to the real disk
  }

  DaemonStart MakeStart() {
    DaemonStart start;
    rules::LoadedRules loaded;
    rules::LoadRuleText(kRules, "t.yaml", loaded);
    EXPECT_TRUE(loaded.errors.empty());
    start.setup.rules = loaded.rules;
    config::DaemonConfig& config = start.setup.config;
    config.file = "/etc/trainwatch/trainwatch.yaml";
    config.state_dir = "/state";
    config::SourceConfig source;
    source.name = "train";
    source.tags = {"train"};
    source.paths = {"/logs/*.log"};
    source.start_at = config::StartAt::kBeginning;
    config.sources = {source};
    config.metrics.enabled = false;  // the textfile is written to the real disk
    config.capture.bundles_dir = (bundles_.path() / "bundles").string();
    config.capture.habana_logs = (bundles_.path() / "no-habana-logs").string();
    config.capture.min_free_percent = 0;
    config.capture.commands.clear();
    return start;
  }

  void Start() {
    daemon_ = std::make_unique<Daemon>(options_, env_, host_);
    daemon_->Start(MakeStart());
    env_.RunUntilIdle();
  }

  std::string Text(const std::string& path) {
    std::string text;
    Result<std::unique_ptr<ReadableFile>> file = env_.files().OpenForReading(path);
    if (!file) {
      return text;
    }
    text.resize((*file)->Status()->size);
    Result<std::size_t> n = (*file)->ReadAt(0, text);
    text.resize(n ? *n : 0);
    return text;
  }

  // The reply to a control request once the loop ran; nullopt when none came or the socket is
  // closed.
  std::optional<std::string> Ask(const std::string& request) {
    auto answer = std::make_shared<std::optional<std::string>>();
    if (!host_.Send(request, answer)) {
      return std::nullopt;
    }
    env_.RunUntilIdle();
    return *answer;
  }

  std::vector<std::filesystem::path> Bundles() const {
    std::vector<std::filesystem::path> found;
    std::error_code ignored;
    for (const auto& entry :
         std::filesystem::directory_iterator(bundles_.path() / "bundles", ignored)) {
      if (entry.path().string().ends_with(".tar.zst")) {
        found.push_back(entry.path());
      }
    }
    return found;
  }

  ::trainwatch::testing::TempDir proc_;
  ::trainwatch::testing::TempDir bundles_;
  FakeEnv env_;
  FakeDaemonHost host_;
  DaemonOptions options_;
  std::unique_ptr<Daemon> daemon_;
};

TEST_F(DaemonOnFakeEnvTest, ALogLineBecomesARecordedIncidentAndABundleAndTheStopSavesOffsets) {
  Start();
  ASSERT_FALSE(daemon_->stopping());
  EXPECT_EQ(host_.control_path, "/state/control.sock");

  const std::string traceback =
      "step 7\nTraceback (most recent call last):\n  File \"train.py\", line 12, in <module>\n"
      "KeyError: 'labels'\n";
  env_.files().Append("/logs/train.log", traceback);
  env_.RunUntilIdle();
  env_.Advance(milliseconds(3000));  // the traceback ends at silence; the incident settles

  const std::string log = Text("/state/incidents.jsonl");
  ASSERT_FALSE(log.empty()) << "no incident recorded";
  const nlohmann::json record = nlohmann::json::parse(log.substr(0, log.find('\n')));
  EXPECT_EQ(record.value("rules", nlohmann::json()), nlohmann::json({"t.traceback"}))
      << record.dump();
  EXPECT_EQ(record.value("summary", ""), "KeyError: 'labels'") << record.dump();

  for (int i = 0; i < 100 && Bundles().empty(); ++i) {
    env_.Advance(milliseconds(100));
  }
  EXPECT_EQ(Bundles().size(), 1u) << "the incident's bundle";

  const std::optional<std::string> status = Ask(R"({"command":"status"})");
  ASSERT_TRUE(status.has_value());
  const nlohmann::json snapshot = nlohmann::json::parse(*status);
  EXPECT_NE(snapshot.dump().find("/logs/train.log"), std::string::npos) << *status;

  ASSERT_TRUE(host_.Signal(SIGTERM));
  env_.RunUntilIdle();
  EXPECT_TRUE(daemon_->stopping());
  EXPECT_EQ(daemon_->exit_code(), 0);
  EXPECT_FALSE(Ask(R"({"command":"status"})").has_value()) << "the socket is closed";
  EXPECT_EQ(host_.stop_checks, 1) << "the watch on wedged workers is armed";
  EXPECT_FALSE(host_.exited.has_value());
  const nlohmann::json offsets = nlohmann::json::parse(Text("/state/offsets.json"));
  ASSERT_EQ(offsets.at("tails").size(), 1u) << offsets.dump();
  EXPECT_EQ(offsets["tails"][0].value("path", ""), "/logs/train.log");
  EXPECT_EQ(offsets["tails"][0].value("offset", 0u), traceback.size());
}

TEST_F(DaemonOnFakeEnvTest, TheNextStartReadsOnFromTheSavedOffsetAndRecordsNothingTwice) {
  Start();
  env_.files().Append("/logs/train.log",
                      "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\n"
                      "ValueError: first\n");
  env_.RunUntilIdle();
  env_.Advance(milliseconds(3000));
  ASSERT_TRUE(host_.Signal(SIGTERM));
  env_.RunUntilIdle();
  daemon_.reset();
  const std::string first = Text("/state/incidents.jsonl");
  ASSERT_NE(first.find("ValueError: first"), std::string::npos) << first;

  // Written while no daemon ran: the next one reads it, and only it.
  env_.files().Append("/logs/train.log", "step 9\n");
  Start();
  env_.Advance(milliseconds(3000));
  EXPECT_EQ(Text("/state/incidents.jsonl"), first) << "nothing new fired, nothing recorded twice";
  const std::optional<std::string> status = Ask(R"({"command":"status"})");
  ASSERT_TRUE(status.has_value());
  const nlohmann::json snapshot = nlohmann::json::parse(*status);
  EXPECT_EQ(snapshot["sources"][0].value("lines", 0), 1) << "only the line written since";
  EXPECT_EQ(snapshot.value("incidents_written", -1), 0) << *status;
}

TEST_F(DaemonOnFakeEnvTest, AnUnreadableOffsetsFileStartsTheDaemonFromTheConfiguredPlace) {
  env_.files().Append("/state/offsets.json", "{\"version\": 1, \"tails\": [");  // cut short
  Start();
  EXPECT_FALSE(daemon_->stopping()) << "a damaged state file is no reason to stop watching";
  env_.files().Append("/logs/train.log",
                      "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\n"
                      "ValueError: after\n");
  env_.RunUntilIdle();
  env_.Advance(milliseconds(3000));
  EXPECT_NE(Text("/state/incidents.jsonl").find("ValueError: after"), std::string::npos);
}

// A hung file system holds every pool worker: `trainwatch status` still answers once its short
// wait for the ranks is over, says the ranks are not fresh, and asks the pool once, however
// often it is asked; once the pool answers, status has its ranks again.
TEST_F(DaemonOnFakeEnvTest, StatusAnswersWhileThePoolIsHeldWithTheRanksReadLast) {
  Start();
  env_.HoldPool();
  auto first = std::make_shared<std::optional<std::string>>();
  auto second = std::make_shared<std::optional<std::string>>();
  ASSERT_TRUE(host_.Send(R"({"command": "status"})", first));
  ASSERT_TRUE(host_.Send(R"({"command": "status"})", second));
  EXPECT_FALSE(first->has_value()) << "it waits for the ranks, briefly";
  EXPECT_EQ(env_.pool_waiting(), 1U) << "one map of the ranks for both";
  env_.Advance(milliseconds(50));
  ASSERT_TRUE(first->has_value());
  ASSERT_TRUE(second->has_value());
  const nlohmann::json status = nlohmann::json::parse(**first);
  ASSERT_TRUE(status.contains("ranks_stale")) << status.dump(1);
  EXPECT_NE(status["ranks_stale"].get<std::string>().find("none has been read yet"),
            std::string::npos)
      << status["ranks_stale"];
  EXPECT_TRUE(status["health"]["watching"].get<bool>()) << status["health"].dump(1);

  env_.ReleasePool();  // the map ends; the next status waits for a fresh one and has it
  env_.RunUntilIdle();
  const std::optional<std::string> fresh = Ask(R"({"command": "status"})");
  ASSERT_TRUE(fresh.has_value());
  EXPECT_FALSE(nlohmann::json::parse(*fresh).contains("ranks_stale")) << *fresh;
}

}  // namespace
}  // namespace trainwatch::app
