// `scan`'s incidents: a log's firing lines grouped as the daemon groups them live — by the
// times the lines give, with its settle, cooldown and follow-ups.
#include "incident/incident_replay.h"

#include <gtest/gtest.h>

#include "core/time_format.h"

namespace trainwatch::incident {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

const detect::WallTime kStart = detect::WallTime{} + hours(24 * 365 * 56);  // 2025-12-..

detect::Event EventOf(rules::RuleKind kind, std::uint64_t line, std::string text,
                      rules::Role role = rules::Role::kPrimary) {
  detect::Event event;
  event.kind = kind;
  event.rule_id = kind == rules::RuleKind::kWarning   ? "t.warn"
                  : role == rules::Role::kConsequence ? "t.peer_closed"
                                                      : "t.crash";
  event.role = role;
  event.line = line;
  event.text = std::move(text);
  return event;
}

TEST(IncidentReplay, ALogWithNoTimesIsOneMomentAndItsAlarmsOneIncident) {
  IncidentReplay replay({}, kStart);
  replay.AddFile(
      "train.log",
      {EventOf(rules::RuleKind::kWarning, 3, "warn"),
       EventOf(rules::RuleKind::kCrash, 9, "[rank0]: RuntimeError: Connection closed by peer",
               rules::Role::kConsequence),
       EventOf(rules::RuleKind::kCrash, 12, "[rank2]: RuntimeError: bad batch")});
  const IncidentReplay::Outcome outcome = replay.Finish();
  ASSERT_EQ(outcome.incidents.size(), 1u);
  const detect::Incident& incident = outcome.incidents[0];
  EXPECT_EQ(incident.kind, rules::RuleKind::kCrash);
  EXPECT_EQ(incident.summary, "[rank2]: RuntimeError: bad batch") << "the root, not the peer";
  EXPECT_EQ(incident.firings.size(), 2u) << "a warning alone opens none; the first alarm does";
  EXPECT_FALSE(incident.fingerprint.empty());
  EXPECT_EQ(incident.opened, kStart);
  EXPECT_TRUE(outcome.follow_ups.empty());
}

TEST(IncidentReplay, TheLinesTimesSplitACrashLoopAsTheCooldownDoes) {
  IncidentReplay replay({}, kStart);  // settle 2 s, cooldown 5 min, follow_up 30 min
  replay.AddFile("train.log",
                 {EventOf(rules::RuleKind::kCrash, 10, "2024-02-21 05:00:00 RuntimeError: x"),
                  EventOf(rules::RuleKind::kCrash, 20, "2024-02-21 05:01:00 RuntimeError: x"),
                  EventOf(rules::RuleKind::kCrash, 30, "2024-02-21 06:00:00 RuntimeError: x"),
                  // No time of its own: its file's last, so it joins the third.
                  EventOf(rules::RuleKind::kCrash, 31, "RuntimeError: y")});
  const IncidentReplay::Outcome outcome = replay.Finish();
  ASSERT_EQ(outcome.incidents.size(), 2u) << "the second crash falls in the first's cooldown";
  EXPECT_EQ(FormatUtc(outcome.incidents[0].opened), "2024-02-21T05:00:00.000Z");
  EXPECT_EQ(FormatUtc(outcome.incidents[1].opened), "2024-02-21T06:00:00.000Z");
  EXPECT_EQ(outcome.incidents[1].firings.size(), 2u);
  EXPECT_EQ(outcome.incidents[1].recurrence.count, 2u) << "the same failure, seen again";
}

TEST(IncidentReplay, APeersConsequenceAfterTheIncidentSettledFollowsItUp) {
  IncidentReplay replay({}, kStart);
  replay.AddFile("rank2.log",
                 {EventOf(rules::RuleKind::kCrash, 5, "2024-02-21 05:00:00 RuntimeError: bad")});
  replay.AddFile("rank0.log", {EventOf(rules::RuleKind::kCrash, 7,
                                       "2024-02-21 05:00:40 RuntimeError: Connection closed",
                                       rules::Role::kConsequence)});
  const IncidentReplay::Outcome outcome = replay.Finish();
  ASSERT_EQ(outcome.incidents.size(), 1u);
  ASSERT_EQ(outcome.follow_ups.size(), 1u);
  EXPECT_EQ(outcome.follow_ups[0].incident_id, outcome.incidents[0].id);
  EXPECT_EQ(outcome.follow_ups[0].firing.stream, "rank0.log");
  EXPECT_EQ(outcome.follow_ups[0].firing.rank, 0) << "its file's name says its rank";
  ASSERT_EQ(outcome.incidents[0].firings.size(), 1u);
  EXPECT_EQ(outcome.incidents[0].firings[0].rank, 2);
}

TEST(IncidentReplay, ARankFromAFilesName) {
  EXPECT_EQ(IncidentReplay::RankOfFileName("/logs/rank3.log"), 3);
  EXPECT_EQ(IncidentReplay::RankOfFileName("log_rank_12.txt"), 12);
  EXPECT_EQ(IncidentReplay::RankOfFileName("job/worker-7.out"), 7);
  EXPECT_EQ(IncidentReplay::RankOfFileName("/rank3/train.log"), std::nullopt) << "a directory";
  EXPECT_EQ(IncidentReplay::RankOfFileName("frank3.log"), std::nullopt);
  EXPECT_EQ(IncidentReplay::RankOfFileName("train.log"), std::nullopt);
}

TEST(IncidentReplay, WarningsAloneOpenNone) {
  IncidentReplay replay({}, kStart);
  replay.AddFile("train.log", {EventOf(rules::RuleKind::kWarning, 3, "warn")});
  EXPECT_TRUE(replay.Finish().incidents.empty());
}

}  // namespace
}  // namespace trainwatch::incident
