// IncidentFlow on the FakeEnv with a recording sink: what each sink hears, in order, as firings
// open, join and settle an incident, as a rule cools down, a failure recurs, an incident is
// acknowledged, a peer's failure is captured for, a capture ends, and the daemon stops during
// one. The capture machinery is the real one, on a temporary directory; the incident log is the
// real one on the FakeEnv's file system.
#include "incident/incident_flow.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "incident/incident_log_sink.h"
#include "incident/nfs_test_rules.h"
#include "ops/incident_log.h"
#include "ops/uncaptured_incidents.h"
#include "support/fake_env.h"
#include "support/temp_dir.h"

namespace trainwatch::incident {
namespace {

using std::chrono::milliseconds;
using testing::FakeEnv;

// Says what it heard, one line an event.
class RecordingSink final : public IncidentSink {
 public:
  explicit RecordingSink(std::vector<std::string>& heard) : heard_(heard) {}
  void Configure(const config::DaemonConfig& /*config*/) override { heard_.push_back("configure"); }
  void Started() override { heard_.push_back("started"); }
  void Fired(const ops::FiringLog::Said& firing, detect::IncidentBuilder::Disposition disposition,
             const detect::Incident* open) override {
    static constexpr const char* kNames[] = {"opened", "joined", "cooling down", "warning alone"};
    heard_.push_back("fired " + firing.rule + ": " + kNames[static_cast<int>(disposition)] +
                     (open != nullptr ? " (" + std::to_string(open->firings.size()) + ")" : ""));
  }
  void Recorded(const detect::Incident& incident) override {
    recorded.push_back(incident);
    heard_.push_back("recorded " + incident.id);
  }
  void SettleEnded() override { heard_.push_back("settle ended"); }
  void AddToCapture(capture::CaptureRequest& request) const override {
    heard_.push_back("add to capture " + request.incident.id);
  }
  void EarlyCaptured(const capture::CaptureOutcome& early) override {
    heard_.push_back("early bundle " + early.incident_id +
                     (early.path.empty() || early.error.empty() ? ": no path or no why" : ""));
  }
  void Captured(const capture::CaptureOutcome& outcome) override {
    heard_.push_back("captured " + outcome.incident_id +
                     (outcome.path.empty() ? ": " + outcome.error : ": bundle"));
  }
  void Concluded(const detect::Incident& facts, const capture::CaptureOutcome& outcome) override {
    heard_.push_back("concluded " + facts.id + (facts.firings.empty() ? "" : " with firings") +
                     (outcome.path.empty() ? ": " + outcome.error : ": bundle"));
  }
  void CaptureInterrupted(const capture::CaptureOutcome& outcome) override {
    heard_.push_back("interrupted " + outcome.incident_id + ": " + outcome.error);
  }
  void FollowedUp(const std::string& incident_id, const detect::Firing& firing,
                  const std::string& why) override {
    heard_.push_back("follow-up " + incident_id + ": " + firing.event.rule_id + " (" + why + ")");
  }
  void Resolved(const ops::Resolution& resolution) override {
    heard_.push_back("resolved " + resolution.id + " by " +
                     std::string(ops::ResolvedByName(resolution.by)));
  }
  void Stopping() override { heard_.push_back("stopping"); }

  std::vector<detect::Incident> recorded;

 private:
  std::vector<std::string>& heard_;
};

class FakeJobProcesses final : public JobProcesses {
 public:
  std::vector<source::WriterProcess> Known() override { return writers; }
  void Rescan() override { ++rescans; }
  void FillCapture(capture::CaptureRequest& request) override {
    request.log_files = {"/logs/train.log"};
  }
  std::vector<source::WriterProcess> writers;
  int rescans = 0;
};

// A line of the kernel log that a rule fired on.
detect::Firing KernelLine(const std::string& rule, const std::string& text) {
  detect::Firing firing;
  firing.event.rule_id = rule;
  firing.event.kind = rules::RuleKind::kHang;
  firing.event.text = text;
  firing.source = "kernel";
  firing.stream = "kmsg";
  return firing;
}

detect::Firing Crash(const std::string& rule, const std::string& text = "Traceback") {
  detect::Firing firing;
  firing.event.rule_id = rule;
  firing.event.kind = rules::RuleKind::kCrash;
  firing.event.text = text;
  firing.event.summary = "RuntimeError: boom";
  firing.source = "train";
  firing.stream = "/logs/train.log";
  return firing;
}

class IncidentFlowTest : public ::testing::Test {
 protected:
  IncidentFlowTest() {
    config_.capture.enabled = false;
    config_.capture.bundles_dir = (dir_.path() / "bundles").string();
    config_.capture.habana_logs = (dir_.path() / "no-habana-logs").string();
    config_.capture.min_free_percent = 0;
    config_.capture.commands.clear();
    config_.incident.settle = milliseconds(2000);
    config_.incident.cooldown = milliseconds(300000);
  }

  // A flow with the recording sink (after the incident log when `with_log`), configured and
  // started.
  void Start(bool with_log = false) {
    IncidentFlow::Owner owner;
    owner.may_record = [this] { return may_record_; };
    owner.recorded = [this] { ++recorded_; };
    owner.settled = [this] { ++settled_; };
    owner.traceback_open = [this] { return traceback_open_; };
    flow_ = std::make_unique<IncidentFlow>(env_, incidents_file(), processes_, owner);
    if (with_log) {
      flow_->AddSink(
          std::make_unique<IncidentLogSink>(incidents_file(), env_.fs(), [] { return true; }));
    }
    auto sink = std::make_unique<RecordingSink>(heard_);
    sink_ = sink.get();
    flow_->AddSink(std::move(sink));
    flow_->LoadHistory();
    flow_->Configure(config_);
    flow_->Start();
    heard_.clear();
  }
  void Fire(detect::Firing firing) {
    firing.time = env_.WallNow();
    std::vector<detect::Firing> firings;
    firings.push_back(std::move(firing));
    flow_->OnFirings(firings, nullptr);
  }
  std::string incidents_file() const { return (dir_.path() / "incidents.jsonl").string(); }
  // The kernel's NFS lines, as storage.nfs_not_responding and storage.nfs_server_ok see them.
  void ServerDown(const std::string& server) {
    Fire(KernelLine("storage.nfs_down", "nfs: server " + server + " not responding, still trying"));
  }
  void ServerBack(const std::string& server) {
    Fire(KernelLine("storage.nfs_back", "nfs: server " + server + " OK"));
  }
  // How often incident `id` was heard resolved by a line.
  std::ptrdiff_t ResolvedByLine(const std::string& id) const {
    return std::count(heard_.begin(), heard_.end(), "resolved " + id + " by line");
  }
  // NFS server fs01 lost (its incident written), then fs02 a minute later, while the rule
  // cools down: the incident's id.
  std::string LoseTwoServersOneIncident() {
    flow_->SetResolvingRules(ResolvingLines(NfsRules()));
    ServerDown("fs01");
    env_.Advance(milliseconds(2000));
    EXPECT_EQ(sink_->recorded.size(), 1u);
    const std::string id = sink_->recorded.empty() ? "" : sink_->recorded[0].id;
    env_.Advance(milliseconds(60000));
    ServerDown("fs02");
    return id;
  }
  // fs01's OK leaves incident `id` open (fs02 is still away); fs02's resolves it.
  void EndsWithBothServersOks(const std::string& id) {
    ServerBack("fs01");
    EXPECT_EQ(ResolvedByLine(id), 0) << "fs02 is still away: " << ::testing::PrintToString(heard_);
    ServerBack("fs02");
    EXPECT_EQ(ResolvedByLine(id), 1) << ::testing::PrintToString(heard_);
  }

  ::trainwatch::testing::TempDir dir_;
  FakeEnv env_;
  config::DaemonConfig config_;
  FakeJobProcesses processes_;
  std::unique_ptr<IncidentFlow> flow_;
  RecordingSink* sink_ = nullptr;
  std::vector<std::string> heard_;
  bool may_record_ = true;
  bool traceback_open_ = false;
  int recorded_ = 0;
  int settled_ = 0;
};

using Heard = std::vector<std::string>;

TEST_F(IncidentFlowTest, AFiringOpensAnIncidentThatIsRecordedOnceItSettles) {
  Start();
  Fire(Crash("py.traceback"));
  EXPECT_EQ(heard_, Heard{"fired py.traceback: opened (1)"});
  EXPECT_FALSE(flow_->idle()) << "an incident settles";
  env_.Advance(milliseconds(1999));
  EXPECT_EQ(heard_.size(), 1u) << "not before its settle time";
  env_.Advance(milliseconds(1));
  ASSERT_EQ(sink_->recorded.size(), 1u);
  const std::string id = sink_->recorded[0].id;
  EXPECT_EQ(heard_,
            (Heard{"fired py.traceback: opened (1)", "recorded " + id,
                   "concluded " + id + ": capture is disabled in the config", "settle ended"}));
  EXPECT_EQ(recorded_, 1);
  EXPECT_EQ(settled_, 1);
  EXPECT_TRUE(flow_->idle());
  EXPECT_EQ(flow_->written(), 1u);
  EXPECT_EQ(flow_->last_incident(), id);
  EXPECT_TRUE(flow_->Follows(id)) << "a crash is followed until it resolves";
}

TEST_F(IncidentFlowTest, FiringsWithinTheSettleTimeJoinOneIncident) {
  Start();
  Fire(Crash("py.traceback"));
  env_.Advance(milliseconds(500));
  Fire(Crash("nccl.error", "NCCL error"));
  env_.Advance(milliseconds(2000));
  ASSERT_EQ(sink_->recorded.size(), 1u);
  EXPECT_EQ(sink_->recorded[0].firings.size(), 2u);
  EXPECT_EQ(heard_[1], "fired nccl.error: joined (2)");
}

// The server's OK told before its incident was written (within the settle time) resolves it
// once written, and opens nothing.
TEST_F(IncidentFlowTest, AnOkWithinTheSettleTimeResolvesTheIncidentOnceWritten) {
  Start();
  flow_->SetResolvingRules(ResolvingLines(NfsRules()));
  ServerDown("fs01");
  env_.Advance(milliseconds(500));
  ServerBack("fs01");
  env_.Advance(milliseconds(1500));
  ASSERT_EQ(sink_->recorded.size(), 1u);
  const std::string id = sink_->recorded[0].id;
  EXPECT_EQ(sink_->recorded[0].firings.size(), 1u) << "the OK joins nothing";
  EXPECT_EQ(ResolvedByLine(id), 1) << ::testing::PrintToString(heard_);
}

// Down, OK, down again, all within one settle time: the server is down when it is written.
TEST_F(IncidentFlowTest, AServerDownAgainAfterItsOkWithinTheSettleTimeStaysOpen) {
  Start();
  flow_->SetResolvingRules(ResolvingLines(NfsRules()));
  ServerDown("fs01");
  env_.Advance(milliseconds(300));
  ServerBack("fs01");
  env_.Advance(milliseconds(300));
  ServerDown("fs01");
  env_.Advance(milliseconds(1400));
  ASSERT_EQ(sink_->recorded.size(), 1u);
  const std::string id = sink_->recorded[0].id;
  EXPECT_EQ(ResolvedByLine(id), 0) << ::testing::PrintToString(heard_);
  ServerBack("fs01");
  EXPECT_EQ(ResolvedByLine(id), 1) << ::testing::PrintToString(heard_);
}

// A second server lost after the first's incident was written cools down (the same rule): it
// opens nothing, and the incident ends only when both are back.
TEST_F(IncidentFlowTest, ASecondServerLostWhileTheRuleCoolsDownEndsOnlyWithItsOwnOk) {
  Start();
  const std::string id = LoseTwoServersOneIncident();
  EXPECT_EQ(heard_.back(), "fired storage.nfs_down: cooling down");
  EndsWithBothServersOks(id);
  EXPECT_EQ(sink_->recorded.size(), 1u);
}

// The same across a restart: the second server's failure, which opened nothing, is kept in
// incidents.jsonl (a follow-up record) and restored with the open incident.
TEST_F(IncidentFlowTest, ASecondServerLostWhileTheRuleCoolsDownIsKeptAcrossARestart) {
  Start(/*with_log=*/true);
  const std::string id = LoseTwoServersOneIncident();
  Result<ops::IncidentHistory> history =
      ops::IncidentLog(incidents_file(), env_.fs()).ReadHistory();
  ASSERT_TRUE(history);
  ASSERT_EQ(history->open.size(), 1u);
  EXPECT_EQ(history->open[0].rule_texts.size(), 2u) << "fs01's and fs02's";
  flow_.reset();
  Start(/*with_log=*/true);  // the daemon restarted
  flow_->SetResolvingRules(ResolvingLines(NfsRules()));
  EndsWithBothServersOks(id);
}

TEST_F(IncidentFlowTest, ATracebackStillBeingReadJoinsTheIncidentItsSettleWaitsForIt) {
  Start();
  Fire(Crash("pytorch.gloo.error", "[rank0]:RuntimeError: Connection closed by peer"));
  traceback_open_ = true;  // a rank's traceback began before; its writer is not yet quiet
  env_.Advance(milliseconds(2000));
  env_.Advance(milliseconds(1500));
  EXPECT_TRUE(sink_->recorded.empty()) << "the settle waits for the traceback";
  traceback_open_ = false;
  Fire(Crash("python.traceback", "RuntimeError: Connection closed by peer"));
  env_.Advance(milliseconds(100));
  ASSERT_EQ(sink_->recorded.size(), 1u);
  EXPECT_EQ(sink_->recorded[0].firings.size(), 2u);
  EXPECT_EQ(heard_[1], "fired python.traceback: joined (2)");
}

TEST_F(IncidentFlowTest, ATracebackThatNeverClosesHoldsTheIncidentAtMostItsWait) {
  Start();
  Fire(Crash("py.traceback"));
  traceback_open_ = true;  // another stream's writer never goes quiet
  env_.Advance(milliseconds(2000));
  env_.Advance(IncidentFlow::kTracebackWait - milliseconds(100));
  EXPECT_TRUE(sink_->recorded.empty());
  env_.Advance(milliseconds(200));
  EXPECT_EQ(sink_->recorded.size(), 1u);
}

TEST_F(IncidentFlowTest, AStallOfTheCrashedJobJoinsItsIncidentAndIsCapturedOnce) {
  config_.capture.enabled = true;
  Start();
  Fire(Crash("py.traceback"));
  env_.Advance(milliseconds(2000));
  ASSERT_EQ(sink_->recorded.size(), 1u);
  const std::string id = sink_->recorded[0].id;
  for (int i = 0; i < 50 && !flow_->capture_idle(); ++i) {
    env_.Advance(milliseconds(100));
  }
  heard_.clear();
  env_.Advance(milliseconds(8000));  // the survivors wait in a collective; their bar stalls
  detect::Firing stall = Crash("test.stall", "Epoch 0: 45%");
  stall.event.kind = rules::RuleKind::kHang;
  Fire(stall);
  env_.Advance(milliseconds(3000));
  EXPECT_EQ(sink_->recorded.size(), 1u) << "no incident of its own";
  EXPECT_TRUE(flow_->capture_idle()) << "no second capture";
  EXPECT_EQ(heard_, (Heard{"follow-up " + id +
                           ": test.stall (a hang of the same job within 30m of crash)"}));
  // Past the window, a stall is a hang of its own.
  env_.Advance(milliseconds(31 * 60 * 1000));
  Fire(stall);
  env_.Advance(milliseconds(2000));
  EXPECT_EQ(sink_->recorded.size(), 2u);
}

TEST_F(IncidentFlowTest, ANewCrashsConsequencesJoinItNotAnOlderIncidentOfTheJob) {
  Start();
  Fire(Crash("py.traceback"));
  env_.Advance(milliseconds(2000));
  ASSERT_EQ(sink_->recorded.size(), 1u);
  env_.Advance(milliseconds(60000));
  Fire(Crash("oom", "CUDA out of memory"));  // a new failure of the same job, the first open
  detect::Firing peer = Crash("gloo.error", "Connection closed by peer");
  peer.event.role = rules::Role::kConsequence;
  Fire(peer);
  env_.Advance(milliseconds(2000));
  ASSERT_EQ(sink_->recorded.size(), 2u);
  EXPECT_EQ(sink_->recorded[1].firings.size(), 2u) << "the consequence joined the new crash";
  for (const std::string& heard : heard_) {
    EXPECT_FALSE(heard.starts_with("follow-up")) << heard;
  }
}

TEST_F(IncidentFlowTest, TheSameRuleWithinItsCooldownOpensNothing) {
  Start();
  Fire(Crash("py.traceback"));
  env_.Advance(milliseconds(2000));
  heard_.clear();
  env_.Advance(milliseconds(60000));
  Fire(Crash("py.traceback"));
  env_.Advance(milliseconds(5000));
  EXPECT_EQ(heard_, Heard{"fired py.traceback: cooling down"});
  EXPECT_EQ(sink_->recorded.size(), 1u);
}

TEST_F(IncidentFlowTest, AnAckResolvesTheIncidentEndsItsCooldownAndTheFailureRecurs) {
  Start();
  Fire(Crash("py.traceback"));
  env_.Advance(milliseconds(2000));
  const std::string first = sink_->recorded.at(0).id;
  EXPECT_EQ(sink_->recorded[0].recurrence.count, 1u);
  heard_.clear();
  Result<ops::Resolution> acked = flow_->Acknowledge(first, "fixed the data");
  ASSERT_TRUE(acked) << acked.error().message;
  EXPECT_EQ(heard_, Heard{"resolved " + first + " by ack"});
  EXPECT_FALSE(flow_->Follows(first));
  EXPECT_FALSE(flow_->Acknowledge(first, "again")) << "resolved already";
  EXPECT_FALSE(flow_->any_unresolved());
  // The same failure again at once: a new incident, not a repeat within the cooldown.
  Fire(Crash("py.traceback"));
  env_.Advance(milliseconds(2000));
  ASSERT_EQ(sink_->recorded.size(), 2u);
  EXPECT_NE(sink_->recorded[1].id, first);
  EXPECT_EQ(sink_->recorded[1].recurrence.count, 2u) << "the same fingerprint, seen twice";
}

TEST_F(IncidentFlowTest, APeersFailureIsRecordedForItsJobAndNotFollowed) {
  Start();
  flow_->OpenPeerIncident({"job-7", "node-b", "inc-b", "crash", "RuntimeError: boom", "application",
                           "retry", 3, 0, 1000});
  ASSERT_EQ(sink_->recorded.size(), 1u);
  const detect::Incident& peer = sink_->recorded[0];
  ASSERT_TRUE(peer.peer);
  EXPECT_EQ(peer.job.id, "job-7");
  EXPECT_EQ(peer.job.id_from, "peer");
  EXPECT_EQ(peer.job.uid, 1000u) << "whose ranks it may capture";
  EXPECT_FALSE(flow_->Follows(peer.id)) << "no node answers for a peer capture";
}

TEST_F(IncidentFlowTest, ACaptureEndsWithItsBundleToldToEverySinkThenTheHooks) {
  config_.capture.enabled = true;
  Start();
  Fire(Crash("py.traceback"));
  env_.Advance(milliseconds(2000));
  const std::string id = sink_->recorded.at(0).id;
  env_.RunUntilIdle();
  for (int i = 0; i < 50 && !flow_->capture_idle(); ++i) {
    env_.Advance(milliseconds(100));
  }
  ASSERT_TRUE(flow_->capture_idle());
  EXPECT_EQ(heard_, (Heard{"fired py.traceback: opened (1)", "recorded " + id,
                           "add to capture " + id, "settle ended", "early bundle " + id,
                           "captured " + id + ": bundle", "concluded " + id + ": bundle"}));
  EXPECT_EQ(settled_, 2) << "settled, then captured";
}

TEST_F(IncidentFlowTest, AStopDuringACaptureTellsTheSinksItWasInterrupted) {
  config_.capture.enabled = true;
  Start();
  env_.HoldPool();  // the capture's collectors take their time
  Fire(Crash("py.traceback"));
  env_.Advance(milliseconds(2000));
  const std::string id = sink_->recorded.at(0).id;
  ASSERT_EQ(flow_->capturing(), std::vector<std::string>{id});
  EXPECT_FALSE(flow_->capture_idle());
  heard_.clear();
  flow_->Abort();
  EXPECT_EQ(heard_, (Heard{"interrupted " + id + ": " + std::string(ops::kInterruptedCapture),
                           "stopping"}));
  EXPECT_TRUE(flow_->capture_idle());
  env_.ReleasePool();
  EXPECT_EQ(heard_.size(), 2u) << "nothing concludes after the stop: no hook runs";
}

TEST_F(IncidentFlowTest, NothingIsRecordedOnceTheStateDirIsAnotherDaemons) {
  Start();
  may_record_ = false;
  Fire(Crash("py.traceback"));
  env_.Advance(milliseconds(2000));
  EXPECT_TRUE(sink_->recorded.empty());
  EXPECT_EQ(recorded_, 0);
}

TEST_F(IncidentFlowTest, TheNextStartCarriesTheCooldownOnFromTheIncidentLog) {
  Start(/*with_log=*/true);
  Fire(Crash("py.traceback"));
  env_.Advance(milliseconds(2000));
  ASSERT_EQ(sink_->recorded.size(), 1u);
  const std::string first = sink_->recorded[0].id;
  flow_.reset();
  env_.Advance(milliseconds(10000));
  Start(/*with_log=*/true);
  EXPECT_TRUE(flow_->any_unresolved()) << "still open from the log";
  EXPECT_TRUE(flow_->Follows(first));
  Fire(Crash("py.traceback"));
  env_.Advance(milliseconds(5000));
  EXPECT_EQ(heard_, Heard{"fired py.traceback: cooling down"});
}

TEST_F(IncidentFlowTest, AManualSnapshotIsRecordedAtOnceAndTheCallerGetsItsOutcome) {
  Start();
  std::optional<capture::CaptureOutcome> got;
  flow_->Manual("before the upgrade", {},
                [&](const capture::CaptureOutcome& outcome) { got = outcome; });
  ASSERT_EQ(sink_->recorded.size(), 1u);
  EXPECT_EQ(sink_->recorded[0].reason, "before the upgrade");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->error, "capture is disabled in the config");
  EXPECT_FALSE(flow_->Follows(sink_->recorded[0].id)) << "a snapshot is no failure";
}

}  // namespace
}  // namespace trainwatch::incident
