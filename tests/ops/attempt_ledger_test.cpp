#include "ops/attempt_ledger.h"

#include <gtest/gtest.h>

#include "detect/incident_json.h"
#include "ops/incident_log.h"

namespace trainwatch::ops {
namespace {

const detect::WallTime kStart = detect::WallTime{} + std::chrono::seconds(1795000000);

detect::AttemptPlace PlaceOf(std::vector<int> pids, std::string marker = "",
                             std::string boot = "b1") {
  detect::AttemptPlace place;
  place.pids = std::move(pids);
  place.marker = std::move(marker);
  place.boot_id = std::move(boot);
  return place;
}

AttemptEntry EntryOf(const detect::AttemptPlace& place, std::string kind, int minute) {
  AttemptEntry entry;
  entry.job_id = "job";
  entry.place = place;
  entry.kind = std::move(kind);
  entry.fingerprint = "f";
  entry.opened = kStart + std::chrono::minutes(minute);
  return entry;
}

TEST(AttemptLedger, TheSameProcessesAreOneAttemptNewOnesTheNext) {
  AttemptLedger ledger;
  detect::AttemptPlace first = ledger.Place("job", PlaceOf({10, 11}));
  EXPECT_EQ(first.number, 1u);
  ledger.Add(EntryOf(first, "slow", 0));
  // A crash of the same processes ends the same attempt, and is its failure.
  detect::AttemptPlace crash = ledger.Place("job", PlaceOf({11, 12}));
  EXPECT_EQ(crash.number, 1u);
  crash.step = detect::JobStep{"step", 40};
  ledger.Add(EntryOf(crash, "crash", 1));
  ASSERT_EQ(ledger.Of("job").size(), 1u);
  EXPECT_EQ(ledger.Of("job")[0].kind, "crash");
  EXPECT_EQ(ledger.Of("job")[0].place.pids, (std::vector<int>{10, 11, 12}));
  // A peer's capture after it does not replace the failure.
  ledger.Add(EntryOf(ledger.Place("job", PlaceOf({12})), "peer", 2));
  EXPECT_EQ(ledger.Of("job")[0].kind, "crash");
  EXPECT_EQ(ledger.Of("job")[0].place.step->count, 40);
  // Processes none of which was there: the next attempt.
  EXPECT_EQ(ledger.Place("job", PlaceOf({20, 21})).number, 2u);
  // Another job counts its own.
  EXPECT_EQ(ledger.Place("other", PlaceOf({10})).number, 1u);
}

TEST(AttemptLedger, TheLaunchersRestartCountAndTheBootDecideFirst) {
  AttemptLedger ledger;
  ledger.Add(
      EntryOf(ledger.Place("job", PlaceOf({10}, "TORCHELASTIC_RESTART_COUNT=0")), "crash", 0));
  // torchrun's agent writes the log too, and stays: its restart count tells the attempts apart.
  EXPECT_EQ(ledger.Place("job", PlaceOf({10}, "TORCHELASTIC_RESTART_COUNT=1")).number, 2u);
  // The same count with no pid known: the same attempt.
  EXPECT_EQ(ledger.Place("job", PlaceOf({}, "TORCHELASTIC_RESTART_COUNT=0")).number, 1u);
  // A fresh run of the launcher counts from 0 again: new processes make it the next.
  EXPECT_EQ(ledger.Place("job", PlaceOf({30}, "TORCHELASTIC_RESTART_COUNT=0")).number, 2u);
  // A reboot ends every process, whatever the pids.
  EXPECT_EQ(ledger.Place("job", PlaceOf({10}, "TORCHELASTIC_RESTART_COUNT=0", "b2")).number, 2u);
  // Nothing known of either: not proven the same, so the next.
  AttemptLedger bare;
  AttemptEntry unknown = EntryOf(bare.Place("", PlaceOf({})), "crash", 0);
  unknown.job_id = "";
  bare.Add(unknown);
  EXPECT_EQ(bare.Place("", PlaceOf({})).number, 2u);
}

TEST(AttemptLedger, IsBounded) {
  AttemptLedger ledger;
  for (int i = 0; i < 100; ++i) {
    ledger.Add(EntryOf(ledger.Place("job", PlaceOf({i + 1})), "crash", i));
  }
  EXPECT_EQ(ledger.Of("job").size(), AttemptLedger::kMaxAttempts);
  EXPECT_EQ(ledger.Of("job").back().place.number, 100u);
  for (int j = 0; j < 100; ++j) {
    AttemptEntry entry =
        EntryOf(ledger.Place("job" + std::to_string(j), PlaceOf({1})), "crash", 100 + j);
    entry.job_id = "job" + std::to_string(j);
    ledger.Add(entry);
  }
  EXPECT_TRUE(ledger.Of("job").empty());  // the quietest job went first
  EXPECT_EQ(ledger.Of("job99").size(), 1u);
}

TEST(AttemptLedger, ComesBackFromTheIncidentLog) {
  detect::Incident incident;
  incident.id = "20261128T000000Z-aa";
  incident.kind = rules::RuleKind::kDevice;
  incident.verdict.verdict = {rules::Cause::kHardware, rules::Action::kExcludeNode};
  incident.fingerprint = "0123";
  incident.opened = kStart;
  incident.job.id = "slurm-42";
  incident.job.node = "n1";
  incident.firings.emplace_back();
  detect::AttemptPlace place = PlaceOf({7, 8}, "SLURM_RESTART_COUNT=2", "boot-x");
  place.number = 3;
  place.step = detect::JobStep{"step", 1200};
  place.same_as = {1, 2};
  place.why = "the remedy did not work";
  place.remedy_failed = true;
  place.failed_first = true;
  incident.attempt = place;
  const IncidentHistory history = ParseIncidentHistory(detect::IncidentJson(incident) + "\n");
  ASSERT_EQ(history.attempts.size(), 1u);
  const AttemptEntry& entry = history.attempts[0];
  EXPECT_EQ(entry.job_id, "slurm-42");
  EXPECT_EQ(entry.incident_id, incident.id);
  EXPECT_EQ(entry.kind, "device");
  EXPECT_EQ(entry.cause, rules::Cause::kHardware);
  EXPECT_EQ(entry.action, rules::Action::kExcludeNode);
  EXPECT_EQ(entry.fingerprint, "0123");
  EXPECT_EQ(entry.opened, kStart);
  EXPECT_EQ(entry.place.number, 3u);
  EXPECT_EQ(entry.place.marker, "SLURM_RESTART_COUNT=2");
  EXPECT_EQ(entry.place.boot_id, "boot-x");
  EXPECT_EQ(entry.place.pids, (std::vector<int>{7, 8}));
  EXPECT_EQ(entry.place.step, (detect::JobStep{"step", 1200}));
  EXPECT_EQ(entry.place.same_as, (std::vector<std::uint32_t>{1, 2}));
  EXPECT_TRUE(entry.place.remedy_failed);
  EXPECT_TRUE(entry.place.failed_first);
  // A restarted daemon's ledger goes on counting.
  AttemptLedger ledger;
  ledger.Restore(history.attempts);
  EXPECT_EQ(ledger.Place("slurm-42", PlaceOf({9}, "SLURM_RESTART_COUNT=3", "boot-x")).number, 4u);
  // A record without a sane attempt number is no entry.
  EXPECT_FALSE(AttemptEntryOf(nlohmann::ordered_json::parse(R"({"attempt":{"number":0}})")));
  EXPECT_FALSE(AttemptEntryOf(nlohmann::ordered_json::parse(R"({"attempt":{"number":"x"}})")));
}

}  // namespace
}  // namespace trainwatch::ops
