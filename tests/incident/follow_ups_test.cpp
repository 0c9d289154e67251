// One failure, one incident: a hang of a job soon after its crash (or a device failure, or a
// peer's failure) follows that incident up; other hangs, later ones and other jobs' do not.
#include "incident/follow_ups.h"

#include <gtest/gtest.h>

#include <string>

namespace trainwatch::incident {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

const SteadyTime kT0 = SteadyTime{} + std::chrono::hours(10);
const Duration kWindow = minutes(30);

detect::Firing FiringOf(rules::RuleKind kind, const std::string& source,
                        const std::string& stream) {
  detect::Firing firing;
  firing.event.kind = kind;
  firing.event.rule_id = kind == rules::RuleKind::kHang ? "test.stall" : "python.traceback";
  firing.source = source;
  firing.stream = stream;
  return firing;
}

detect::Incident Crash(const std::string& stream, const std::string& job_id = "") {
  detect::Incident incident;
  incident.id = "crash-1";
  incident.kind = rules::RuleKind::kCrash;
  incident.job.id = job_id;
  incident.firings.push_back(FiringOf(rules::RuleKind::kCrash, "train", stream));
  return incident;
}

std::string NoJob(const detect::Firing& /*firing*/) { return ""; }
bool Open(const std::string& /*id*/) { return true; }
bool Closed(const std::string& /*id*/) { return false; }

TEST(FollowUps, AStallOfTheCrashedStreamWithinTheWindowJoinsTheCrash) {
  FollowUps follow_ups;
  follow_ups.Remember(Crash("/logs/ranks.log"), "", true, kT0, kWindow);
  const detect::Firing stall = FiringOf(rules::RuleKind::kHang, "train", "/logs/ranks.log");
  const std::optional<FollowUps::Joined> joined =
      follow_ups.Of(stall, kT0 + seconds(8), NoJob, Open);
  ASSERT_TRUE(joined.has_value());
  EXPECT_EQ(joined->incident_id, "crash-1");
  EXPECT_EQ(joined->why, "a hang of the same job within 30m of crash");
  EXPECT_FALSE(follow_ups.Of(stall, kT0 + minutes(31), NoJob, Open)) << "past the window: its own";
  EXPECT_FALSE(follow_ups.Of(FiringOf(rules::RuleKind::kCrash, "train", "/logs/ranks.log"),
                             kT0 + seconds(8), NoJob, Open))
      << "a rank's own error is a failure of its own";
}

TEST(FollowUps, AnotherRanksLogFollowsUpByTheJobIdOrTheSourceWhenNoIdIsKnown) {
  FollowUps follow_ups;
  follow_ups.Remember(Crash("/logs/rank2.log"), "", true, kT0, kWindow);
  const detect::Firing stall = FiringOf(rules::RuleKind::kHang, "train", "/logs/rank0.log");
  EXPECT_TRUE(follow_ups.Of(stall, kT0 + seconds(8), NoJob, Open)) << "one source, no job id";
  EXPECT_FALSE(follow_ups.Of(FiringOf(rules::RuleKind::kHang, "other", "/other/a.log"),
                             kT0 + seconds(8), NoJob, Open));

  FollowUps by_id;
  by_id.Remember(Crash("/logs/rank2.log"), "run-7", true, kT0, kWindow);
  EXPECT_TRUE(by_id.Of(
      stall, kT0 + seconds(8), [](const detect::Firing&) { return "run-7"; }, Open));
  EXPECT_FALSE(by_id.Of(
      stall, kT0 + seconds(8), [](const detect::Firing&) { return "run-8"; }, Open))
      << "another job's hang in the same source";
}

TEST(FollowUps, APeersFailureIsFollowedUpByItsJobButAHangOrWarningIsNot) {
  FollowUps follow_ups;
  detect::Incident peer;
  peer.id = "peer-1";
  peer.kind = rules::RuleKind::kWarning;
  peer.job.id = "run-7";
  peer.peer = detect::PeerLink{};
  peer.peer->node = "node-b";
  peer.peer->kind = "crash";
  follow_ups.Remember(peer, "run-7", false, kT0, kWindow);
  detect::Incident hang = Crash("/logs/x.log", "run-9");
  hang.kind = rules::RuleKind::kHang;
  follow_ups.Remember(hang, "run-9", true, kT0, kWindow);
  const std::optional<FollowUps::Joined> joined = follow_ups.Of(
      FiringOf(rules::RuleKind::kHang, "train", "/logs/rank0.log"), kT0,
      [](const detect::Firing&) { return "run-7"; }, Closed);
  ASSERT_TRUE(joined.has_value());
  EXPECT_EQ(joined->incident_id, "peer-1");
  EXPECT_EQ(joined->why, "a hang of the same job within 30m of its peer node-b's crash")
      << "a peer's incident is not followed here: whether it resolved is not asked";
  EXPECT_FALSE(follow_ups.Of(
      FiringOf(rules::RuleKind::kHang, "train", "/logs/x.log"), kT0,
      [](const detect::Firing&) { return "run-9"; }, Open))
      << "a hang's incident is followed by nothing";
}

TEST(FollowUps, AWindowOfZeroTurnsThemOff) {
  FollowUps follow_ups;
  follow_ups.Remember(Crash("/logs/ranks.log"), "", true, kT0, Duration::zero());
  EXPECT_FALSE(follow_ups.Of(FiringOf(rules::RuleKind::kHang, "train", "/logs/ranks.log"), kT0,
                             NoJob, Open));
}

TEST(FollowUps, APeersGlooErrorOrTheLaunchersReportAfterTheSettleJoinTooButNotWhenResolved) {
  FollowUps follow_ups;
  follow_ups.Remember(Crash("/logs/ranks.log"), "", true, kT0, kWindow);
  detect::Firing gloo = FiringOf(rules::RuleKind::kCrash, "train", "/logs/ranks.log");
  gloo.event.role = rules::Role::kConsequence;
  const std::optional<FollowUps::Joined> joined =
      follow_ups.Of(gloo, kT0 + seconds(5), NoJob, Open);
  ASSERT_TRUE(joined.has_value());
  EXPECT_EQ(joined->why, "a consequence of the same job within 30m of crash");
  gloo.event.role = rules::Role::kReport;
  EXPECT_TRUE(follow_ups.Of(gloo, kT0 + seconds(5), NoJob, Open));
  // The crash resolved (the job restarted and made progress): a hang now is a new failure.
  EXPECT_FALSE(follow_ups.Of(FiringOf(rules::RuleKind::kHang, "train", "/logs/ranks.log"),
                             kT0 + minutes(5), NoJob, Closed));
}

}  // namespace
}  // namespace trainwatch::incident
