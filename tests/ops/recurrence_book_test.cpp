#include "ops/recurrence_book.h"

#include <gtest/gtest.h>

#include "detect/incident_json.h"
#include "ops/incident_log.h"

namespace trainwatch::ops {
namespace {

using std::chrono::minutes;

const detect::WallTime kNine = detect::WallTime{} + std::chrono::seconds(1764061920);  // 09:12Z

detect::Incident Failure(std::string summary, rules::Cause cause, minutes after) {
  detect::Incident incident;
  incident.kind = rules::RuleKind::kCrash;
  incident.rules = {"job.error"};
  incident.verdict.rule = "job.error";
  incident.verdict.verdict = {cause, rules::Action::kInspect};
  incident.verdict.why = "job.error (" + std::string(rules::CauseName(cause)) + ")";
  incident.summary = std::move(summary);
  incident.opened = kNine + after;
  return incident;
}

TEST(RecurrenceBook, AFailureSeenAgainIsCountedAndItsVerdictKept) {
  RecurrenceBook book;
  detect::Incident first =
      Failure("[rank2]: KeyError: 'labels' at step 10", rules::Cause::kApplication, minutes(0));
  book.Stamp(first);
  EXPECT_EQ(first.recurrence.count, 1u);
  EXPECT_EQ(first.verdict.verdict.action, rules::Action::kInspect);
  EXPECT_EQ(RecurrenceText(first.recurrence), "");
  detect::Incident second =
      Failure("[rank5]: KeyError: 'labels' at step 4", rules::Cause::kApplication, minutes(7));
  book.Stamp(second);
  detect::Incident third =
      Failure("[rank0]: KeyError: 'labels' at step 12", rules::Cause::kApplication, minutes(15));
  book.Stamp(third);
  EXPECT_EQ(third.fingerprint, first.fingerprint);
  EXPECT_EQ(third.recurrence.count, 3u);
  EXPECT_EQ(third.recurrence.first, first.opened);
  EXPECT_EQ(third.recurrence.previous, second.opened);
  // What to do about it is the retry policy's, which knows the attempts (retry_policy_test).
  EXPECT_EQ(third.verdict.verdict.action, rules::Action::kInspect);
  EXPECT_EQ(RecurrenceText(third.recurrence), "; the 3rd time since 2025-11-25T09:12:00Z");
  // Another failure is its own.
  detect::Incident other =
      Failure("ValueError: bad shape", rules::Cause::kApplication, minutes(20));
  book.Stamp(other);
  EXPECT_EQ(other.recurrence.count, 1u);
  detect::Incident device = Failure("Xid 79", rules::Cause::kHardware, minutes(21));
  book.Stamp(device);
  device = Failure("Xid 79", rules::Cause::kHardware, minutes(22));
  book.Stamp(device);
  EXPECT_EQ(device.recurrence.count, 2u);
  EXPECT_EQ(device.verdict.verdict.action, rules::Action::kInspect);
}

TEST(RecurrenceBook, TheCountGoesOnAfterARestartFromTheIncidentLog) {
  RecurrenceBook before;
  std::string log;
  for (int i = 0; i < 2; ++i) {
    detect::Incident incident =
        Failure("RuntimeError: boom " + std::to_string(i), rules::Cause::kUnknown, minutes(i));
    incident.firings.emplace_back();  // a record of an incident has firings
    before.Stamp(incident);
    log += detect::IncidentJson(incident) + "\n";
  }
  RecurrenceBook after;
  after.Restore(ParseIncidentHistory(log).fingerprints);
  detect::Incident again = Failure("RuntimeError: boom 9", rules::Cause::kUnknown, minutes(30));
  after.Stamp(again);
  EXPECT_EQ(again.recurrence.count, 3u);
  EXPECT_EQ(again.recurrence.first, kNine);
  EXPECT_EQ(again.recurrence.previous, kNine + minutes(1));
}

}  // namespace
}  // namespace trainwatch::ops
