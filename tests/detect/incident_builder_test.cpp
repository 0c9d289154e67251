#include "detect/incident_builder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace trainwatch::detect {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using Disposition = IncidentBuilder::Disposition;
using rules::RuleKind;

const IncidentBuilder::Clock::time_point kT0 =
    IncidentBuilder::Clock::time_point{} + std::chrono::hours(100);
// 2024-01-02T03:04:05Z
const WallTime kWall = WallTime{} + seconds(1704164645);
constexpr IncidentSettings kSettings{Duration(seconds(2)), Duration(minutes(5))};

// A pattern event has no summary; a traceback's event has its exception line as summary.
Firing Fire(std::string rule, RuleKind kind, std::string text, std::string summary = "",
            WallTime time = kWall) {
  Firing firing;
  firing.event.rule_id = std::move(rule);
  firing.event.kind = kind;
  firing.event.text = std::move(text);
  firing.event.summary = std::move(summary);
  firing.source = "train";
  firing.stream = "/logs/train.log";
  firing.time = time;
  return firing;
}

Firing Crash(std::string rule) { return Fire(std::move(rule), RuleKind::kCrash, "crash text"); }

TEST(IncidentBuilder, TheSettledIncidentCarriesTheVerdictOfAllItsFiringsBeyondTheCap) {
  IncidentBuilder builder(kSettings);
  for (std::size_t i = 0; i <= IncidentBuilder::kMaxFirings; ++i) {
    Firing timeout = Crash("t.timeout");
    builder.Add(std::move(timeout), kT0);
  }
  Firing xid = Fire("t.xid", RuleKind::kDevice, "Xid 79");
  xid.event.verdict = {rules::Cause::kHardware, rules::Action::kExcludeNode};
  builder.Add(std::move(xid), kT0 + seconds(1));  // kept out of the firings: the cap is full
  const std::optional<Incident> incident = builder.TakeSettled(kT0 + seconds(2), kWall);
  ASSERT_TRUE(incident.has_value());
  EXPECT_GT(incident->more_firings, 0u);
  EXPECT_EQ(incident->verdict.rule, "t.xid");
  EXPECT_EQ(incident->verdict.verdict,
            (rules::Verdict{rules::Cause::kHardware, rules::Action::kExcludeNode}));
}

TEST(IncidentBuilder, FirstAlarmOpensAnIncident) {
  IncidentBuilder builder(kSettings);
  EXPECT_FALSE(builder.open().has_value());
  EXPECT_EQ(builder.SettlesAt(), std::nullopt);

  EXPECT_EQ(builder.Add(Fire("t.oom", RuleKind::kCrash, "CUDA out of memory"), kT0),
            Disposition::kOpened);
  ASSERT_TRUE(builder.open().has_value());
  const Incident& incident = *builder.open();
  EXPECT_FALSE(incident.id.empty());
  EXPECT_EQ(incident.kind, RuleKind::kCrash);
  EXPECT_EQ(incident.summary, "CUDA out of memory");
  EXPECT_EQ(incident.rules, std::vector<std::string>{"t.oom"});
  ASSERT_EQ(incident.firings.size(), 1u);
  EXPECT_EQ(incident.firings[0].event.rule_id, "t.oom");
  EXPECT_EQ(incident.firings[0].stream, "/logs/train.log");
  EXPECT_EQ(incident.opened, kWall);
  EXPECT_EQ(incident.more_firings, 0u);
  EXPECT_TRUE(incident.reason.empty());
  EXPECT_EQ(builder.SettlesAt(), kT0 + kSettings.settle);
}

TEST(IncidentBuilder, EventsWithinSettleJoinTheOpenIncident) {
  IncidentBuilder builder(kSettings);
  ASSERT_EQ(builder.Add(Crash("a"), kT0), Disposition::kOpened);
  EXPECT_EQ(builder.Add(Crash("b"), kT0 + milliseconds(500)), Disposition::kJoined);
  EXPECT_EQ(builder.Add(Crash("a"), kT0 + milliseconds(1999)), Disposition::kJoined);
  const Incident& incident = *builder.open();
  EXPECT_EQ(incident.rules, (std::vector<std::string>{"a", "b"}));  // distinct, firing order
  ASSERT_EQ(incident.firings.size(), 3u);
  EXPECT_EQ(incident.firings[1].event.rule_id, "b");
  EXPECT_EQ(incident.firings[2].event.rule_id, "a");
  EXPECT_EQ(builder.SettlesAt(), kT0 + kSettings.settle);  // joining does not extend it
}

TEST(IncidentBuilder, TakeSettledGivesTheIncidentOnceSettleHasPassed) {
  IncidentBuilder builder(kSettings);
  ASSERT_EQ(builder.Add(Crash("a"), kT0), Disposition::kOpened);
  EXPECT_FALSE(builder.TakeSettled(kT0, kWall).has_value());
  EXPECT_FALSE(builder.TakeSettled(kT0 + kSettings.settle - milliseconds(1), kWall).has_value());
  EXPECT_TRUE(builder.open().has_value());

  std::optional<Incident> done = builder.TakeSettled(kT0 + kSettings.settle, kWall);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->rules, std::vector<std::string>{"a"});
  EXPECT_NE(done->closed, WallTime{});
  EXPECT_FALSE(builder.open().has_value());
  EXPECT_EQ(builder.SettlesAt(), std::nullopt);
  EXPECT_FALSE(builder.TakeSettled(kT0 + minutes(1), kWall).has_value());
}

TEST(IncidentBuilder, TakeSettledLateStillGivesTheIncident) {
  IncidentBuilder builder(kSettings);
  ASSERT_EQ(builder.Add(Crash("a"), kT0), Disposition::kOpened);
  EXPECT_TRUE(builder.TakeSettled(kT0 + minutes(10), kWall).has_value());
}

TEST(IncidentBuilder, RulesOfAClosedIncidentCoolDownWhileOthersOpen) {
  IncidentBuilder builder(kSettings);
  ASSERT_EQ(builder.Add(Crash("opener"), kT0), Disposition::kOpened);
  ASSERT_EQ(builder.Add(Crash("joiner"), kT0 + seconds(1)), Disposition::kJoined);
  ASSERT_TRUE(builder.TakeSettled(kT0 + seconds(2), kWall).has_value());

  // The crash loop prints the same traceback a minute later.
  EXPECT_EQ(builder.Add(Crash("opener"), kT0 + minutes(1)), Disposition::kCoolingDown);
  EXPECT_EQ(builder.Add(Crash("joiner"), kT0 + minutes(1)), Disposition::kCoolingDown);
  EXPECT_FALSE(builder.open().has_value());

  EXPECT_EQ(builder.Add(Crash("other"), kT0 + minutes(2)), Disposition::kOpened);
  // While another incident is open, a cooling rule joins it.
  EXPECT_EQ(builder.Add(Crash("opener"), kT0 + minutes(2)), Disposition::kJoined);
  EXPECT_EQ(builder.open()->rules, (std::vector<std::string>{"other", "opener"}));
}

TEST(IncidentBuilder, CooldownCountsFromTheIncidentsOpeningAndExpires) {
  IncidentBuilder builder(kSettings);
  ASSERT_EQ(builder.Add(Crash("opener"), kT0), Disposition::kOpened);
  ASSERT_EQ(builder.Add(Crash("joiner"), kT0 + seconds(1)), Disposition::kJoined);
  ASSERT_TRUE(builder.TakeSettled(kT0 + seconds(2), kWall).has_value());

  const auto expires = kT0 + kSettings.cooldown;
  EXPECT_EQ(builder.Add(Crash("joiner"), expires - milliseconds(1)), Disposition::kCoolingDown);
  EXPECT_EQ(builder.Add(Crash("opener"), expires - milliseconds(1)), Disposition::kCoolingDown);
  EXPECT_EQ(builder.Add(Crash("joiner"), expires), Disposition::kOpened);
}

TEST(IncidentBuilder, AWarningAloneOpensNothingButJoinsAnOpenIncident) {
  IncidentBuilder builder(kSettings);
  EXPECT_EQ(builder.Add(Fire("w", RuleKind::kWarning, "retrying"), kT0),
            Disposition::kWarningAlone);
  EXPECT_FALSE(builder.open().has_value());

  ASSERT_EQ(builder.Add(Fire("h", RuleKind::kHang, "stalled"), kT0 + seconds(1)),
            Disposition::kOpened);
  EXPECT_EQ(builder.Add(Fire("w", RuleKind::kWarning, "retrying"), kT0 + seconds(2)),
            Disposition::kJoined);
  EXPECT_EQ(builder.open()->kind, RuleKind::kHang);
  EXPECT_EQ(builder.open()->summary, "stalled");
  EXPECT_EQ(builder.open()->rules, (std::vector<std::string>{"h", "w"}));
}

TEST(IncidentBuilder, HangCrashAndDeviceEventsAllOpen) {
  for (RuleKind kind : {RuleKind::kCrash, RuleKind::kHang, RuleKind::kDevice}) {
    IncidentBuilder builder(kSettings);
    EXPECT_EQ(builder.Add(Fire("r", kind, "x"), kT0), Disposition::kOpened)
        << rules::RuleKindName(kind);
  }
}

struct Telling {
  std::string name;
  std::vector<Firing> firings;  // in arrival order
  RuleKind kind;
  std::string summary;
};

TEST(IncidentBuilder, KindAndSummaryComeFromTheMostTellingEvent) {
  const Firing traceback = Fire("py.traceback", RuleKind::kCrash,
                                "Traceback (most recent call last):", "ChildFailedError: rank 3");
  const Firing later_traceback = Fire("py.traceback", RuleKind::kCrash,
                                      "Traceback (most recent call last):", "RuntimeError: later");
  const Firing nccl = Fire("nccl.timeout", RuleKind::kCrash, "Watchdog caught collective timeout");
  const Firing oom = Fire("cuda.oom", RuleKind::kCrash, "CUDA out of memory");
  const Firing xid = Fire("nvidia.xid", RuleKind::kDevice, "NVRM: Xid 79: GPU fallen off the bus");
  const Firing stall = Fire("progress.stall", RuleKind::kHang, "50%|#####", "Epoch # stalled");
  const Firing hang_line = Fire("ps.hang", RuleKind::kHang, "watchdog: no heartbeat for 600s");
  const Firing warning = Fire("py.warning", RuleKind::kWarning, "UserWarning: deprecated");

  const std::vector<Telling> cases = {
      {"only one", {oom}, RuleKind::kCrash, "CUDA out of memory"},
      {"device beats an earlier crash", {oom, xid}, RuleKind::kDevice, xid.event.text},
      {"device stays over a later crash", {xid, oom}, RuleKind::kDevice, xid.event.text},
      {"crash beats an earlier hang",
       {stall, traceback},
       RuleKind::kCrash,
       "ChildFailedError: rank 3"},
      {"hang stays over a later warning", {stall, warning}, RuleKind::kHang, "Epoch # stalled"},
      {"pattern beats an earlier traceback", {traceback, nccl}, RuleKind::kCrash, nccl.event.text},
      {"pattern stays over a later traceback",
       {nccl, traceback},
       RuleKind::kCrash,
       nccl.event.text},
      {"hang pattern beats a hang with summary",
       {stall, hang_line},
       RuleKind::kHang,
       hang_line.event.text},
      {"kind beats a summaryless pattern",
       {hang_line, traceback},
       RuleKind::kCrash,
       "ChildFailedError: rank 3"},
      {"earliest of two patterns", {nccl, oom}, RuleKind::kCrash, nccl.event.text},
      {"earliest of two tracebacks",
       {traceback, later_traceback},
       RuleKind::kCrash,
       "ChildFailedError: rank 3"},
      {"earliest pattern after tracebacks",
       {traceback, oom, nccl},
       RuleKind::kCrash,
       oom.event.text},
  };
  for (const Telling& c : cases) {
    IncidentBuilder builder(kSettings);
    auto now = kT0;
    for (const Firing& firing : c.firings) {
      builder.Add(firing, now);
      now += milliseconds(100);
    }
    ASSERT_TRUE(builder.open().has_value()) << c.name;
    EXPECT_EQ(builder.open()->kind, c.kind) << c.name;
    EXPECT_EQ(builder.open()->summary, c.summary) << c.name;
    EXPECT_EQ(builder.open()->firings.size(), c.firings.size()) << c.name;
  }
}

TEST(IncidentBuilder, FiringsBeyondTheCapAreCounted) {
  IncidentBuilder builder(kSettings);
  const std::size_t total = IncidentBuilder::kMaxFirings + 3;
  for (std::size_t i = 0; i < total; ++i) {
    Firing firing = Crash(i % 2 == 0 ? "even" : "odd");
    firing.event.line = i + 1;
    builder.Add(std::move(firing), kT0 + milliseconds(i));
  }
  std::optional<Incident> done = builder.TakeSettled(kT0 + minutes(1), kWall);
  ASSERT_TRUE(done.has_value());
  ASSERT_EQ(done->firings.size(), IncidentBuilder::kMaxFirings);
  EXPECT_EQ(done->more_firings, 3u);
  EXPECT_EQ(done->firings.front().event.line, 1u);  // the first ones are kept
  EXPECT_EQ(done->firings.back().event.line, IncidentBuilder::kMaxFirings);
  EXPECT_EQ(done->rules, (std::vector<std::string>{"even", "odd"}));
}

TEST(IncidentBuilder, RestoredCooldownKeepsARuleFromOpening) {
  IncidentBuilder builder(kSettings);
  builder.RestoreCooldown("a", kT0);
  EXPECT_EQ(builder.Add(Crash("a"), kT0 + minutes(1)), Disposition::kCoolingDown);
  EXPECT_EQ(builder.Add(Crash("a"), kT0 + kSettings.cooldown - milliseconds(1)),
            Disposition::kCoolingDown);
  EXPECT_EQ(builder.Add(Crash("a"), kT0 + kSettings.cooldown), Disposition::kOpened);
}

TEST(IncidentBuilder, RestoringAnOlderOpeningDoesNotShortenACooldown) {
  IncidentBuilder builder(kSettings);
  ASSERT_EQ(builder.Add(Crash("a"), kT0), Disposition::kOpened);
  ASSERT_TRUE(builder.TakeSettled(kT0 + seconds(2), kWall).has_value());
  builder.RestoreCooldown("a", kT0 - std::chrono::hours(1));
  EXPECT_EQ(builder.Add(Crash("a"), kT0 + minutes(1)), Disposition::kCoolingDown);
}

TEST(IncidentBuilder, ManualSnapshotIsAnIncidentOfItsOwn) {
  IncidentBuilder builder(kSettings);
  ASSERT_EQ(builder.Add(Crash("a"), kT0), Disposition::kOpened);
  const Incident manual = builder.Manual("loss looks odd", kWall + seconds(3));
  EXPECT_EQ(manual.reason, "loss looks odd");
  EXPECT_EQ(manual.summary, "manual snapshot: loss looks odd");
  EXPECT_EQ(manual.kind, RuleKind::kWarning);
  EXPECT_EQ(manual.rules, std::vector<std::string>{"manual.snapshot"});
  EXPECT_TRUE(manual.firings.empty());
  EXPECT_EQ(manual.opened, kWall + seconds(3));
  EXPECT_EQ(manual.closed, kWall + seconds(3));
  EXPECT_TRUE(manual.id.starts_with("20240102T030408Z-")) << manual.id;
  // The open incident is untouched.
  ASSERT_TRUE(builder.open().has_value());
  EXPECT_EQ(builder.open()->rules, std::vector<std::string>{"a"});
  EXPECT_NE(builder.open()->id, manual.id);
}

TEST(IncidentBuilder, IdsStartWithTheOpeningTimeInUtc) {
  IncidentBuilder builder(kSettings);
  ASSERT_EQ(builder.Add(Fire("a", RuleKind::kCrash, "x", "", kWall), kT0), Disposition::kOpened);
  EXPECT_TRUE(builder.open()->id.starts_with("20240102T030405Z-")) << builder.open()->id;
}

TEST(IncidentBuilder, IdsAreUniqueAndSortByTime) {
  IncidentBuilder builder(kSettings);
  std::vector<std::string> ids;
  ids.reserve(20);
  for (int i = 0; i < 20; ++i) {
    // Two per second: order must hold within a second too.
    ids.push_back(builder.Manual("r", kWall + milliseconds(500 * i)).id);
  }
  auto now = kT0;
  for (int i = 0; i < 3; ++i) {
    const WallTime at = kWall + seconds(10 + i);
    ASSERT_EQ(builder.Add(Fire("r" + std::to_string(i), RuleKind::kCrash, "x", "", at), now),
              Disposition::kOpened);
    now += seconds(2);
    std::optional<Incident> done = builder.TakeSettled(now, kWall);
    ASSERT_TRUE(done.has_value());
    ids.push_back(done->id);
  }
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), ids.size());
}

TEST(IncidentBuilder, IdsStayUniqueAndSortedForManyIncidentsInOneSecond) {
  IncidentBuilder builder(kSettings);
  std::vector<std::string> ids;
  ids.reserve(300);
  for (int i = 0; i < 300; ++i) {
    ids.push_back(builder.Manual("scripted", kWall).id);
  }
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), ids.size());
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
}

TEST(IncidentBuilder, ACrashItsWriterWentOnFromBecomesAWarningWithinSettle) {
  IncidentBuilder builder(kSettings);
  Firing traceback = Fire("python.traceback", RuleKind::kCrash,
                          "Traceback (most recent call "
                          "last):",
                          "ValueError: bad batch");
  traceback.event.line = 4;
  ASSERT_EQ(builder.Add(traceback, kT0), Disposition::kOpened);
  builder.CrashCaught("train", "/logs/other.log", 9);  // another stream went on: no matter
  EXPECT_EQ(builder.open()->kind, RuleKind::kCrash);
  builder.CrashCaught("train", "/logs/train.log", 3);  // progress before it: no matter
  EXPECT_EQ(builder.open()->kind, RuleKind::kCrash);
  builder.CrashCaught("train", "/logs/train.log", 4);  // the training loop went on after it
  EXPECT_EQ(builder.open()->kind, RuleKind::kWarning);
  EXPECT_EQ(builder.open()->summary, "ValueError: bad batch (caught: the writer went on)");
  const std::optional<Incident> done = builder.TakeSettled(kT0 + seconds(2), kWall);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->kind, RuleKind::kWarning) << "no crash, and so no bundle";
}

TEST(IncidentBuilder, ACaughtCrashLeavesTheOtherAlarmsOfItsIncident) {
  IncidentBuilder builder(kSettings);
  Firing traceback = Fire("python.traceback", RuleKind::kCrash, "Traceback", "KeyError: 'x'");
  traceback.event.line = 4;
  builder.Add(traceback, kT0);
  Firing other_rank = Fire("t.oom", RuleKind::kCrash, "CUDA out of memory");
  other_rank.stream = "/logs/rank1.log";
  other_rank.event.line = 7;
  builder.Add(other_rank, kT0 + milliseconds(100));
  builder.CrashCaught("train", "/logs/train.log", 9);
  EXPECT_EQ(builder.open()->kind, RuleKind::kCrash);
  EXPECT_EQ(builder.open()->summary, "CUDA out of memory");
}

}  // namespace
}  // namespace trainwatch::detect
