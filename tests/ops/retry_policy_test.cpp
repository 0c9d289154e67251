// The retry policy's decisions, as a table: each scenario is a job's attempts in order, each
// with what its failure was and the action the policy must give it. The ledger places them
// (one entry per attempt), so the table tests the two together as the daemon uses them.
#include "ops/retry_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "detect/attempt_text.h"
#include "ops/attempt_ledger.h"

namespace trainwatch::ops {
namespace {

using rules::Action;
using rules::Cause;
using std::chrono::minutes;

const detect::WallTime kStart = detect::WallTime{} + std::chrono::seconds(1795000000);

struct Step {
  const char* label;
  std::int64_t count;
};

// One attempt's failure.
struct Failed {
  const char* kind = "crash";
  const char* fingerprint = "a";
  Cause cause = Cause::kApplication;
  Action rules_action = Action::kInspect;  // what the rules said
  std::optional<Step> step{};
  bool first_here = false;
  const char* boot = "boot-1";
  int minute = 0;                      // when it failed, after the job started
  Action expected = Action::kInspect;  // what the policy must say
  bool remedy_failed = false;
};

struct Scenario {
  const char* name;
  std::vector<Failed> attempts;
  config::RetryConfig config{};
};

std::vector<Scenario> Scenarios() {
  config::RetryConfig budget2;
  budget2.same_failure_budget = 2;
  return {
      {"the same crash at the same step each attempt: cancel_retries at the budget",
       {{.step = Step{"step", 120}, .minute = 0},
        {.step = Step{"step", 120}, .minute = 10},
        {.step = Step{"step", 120}, .minute = 20, .expected = Action::kCancelRetries}}},
      {"the same crash before any step (an import error): cancel_retries at the budget",
       {{.minute = 0}, {.minute = 10}, {.minute = 20, .expected = Action::kCancelRetries}}},
      {"the same crash at advancing steps: keep retrying",
       {{.step = Step{"step", 100}, .minute = 0},
        {.step = Step{"step", 250}, .minute = 15, .expected = Action::kRetry},
        {.step = Step{"step", 400}, .minute = 30, .expected = Action::kRetry},
        {.step = Step{"step", 580}, .minute = 45, .expected = Action::kRetry}}},
      {"progress, then stuck at one step: retry, then cancel_retries once stuck for the budget",
       {{.step = Step{"step", 100}, .minute = 0},
        {.step = Step{"step", 200}, .minute = 15, .expected = Action::kRetry},
        {.step = Step{"step", 200}, .minute = 30},
        {.step = Step{"step", 150}, .minute = 45, .expected = Action::kCancelRetries}}},
      {"alternating causes, no progress, spaced out: no pattern, the rules' own action",
       {{.fingerprint = "a", .minute = 0},
        {.fingerprint = "b",
         .cause = Cause::kInfrastructure,
         .rules_action = Action::kRetry,
         .minute = 15,
         .expected = Action::kRetry},
        {.fingerprint = "a", .minute = 30},
        {.fingerprint = "b",
         .cause = Cause::kInfrastructure,
         .rules_action = Action::kRetry,
         .minute = 45,
         .expected = Action::kRetry}}},
      {"a storm: five attempts failing within 30 minutes, each differently",
       {{.fingerprint = "a", .minute = 0},
        {.fingerprint = "b", .minute = 2},
        {.fingerprint = "c", .minute = 4},
        {.fingerprint = "d", .minute = 6},
        {.fingerprint = "e", .minute = 8, .expected = Action::kRestartStorm}}},
      {"five attempts over two hours are no storm",
       {{.fingerprint = "a", .minute = 0},
        {.fingerprint = "b", .minute = 30},
        {.fingerprint = "c", .minute = 60},
        {.fingerprint = "d", .minute = 90},
        {.fingerprint = "e", .minute = 120}}},
      {"this node first to fail in three attempts in a row (not the job's fault): exclude_node",
       {{.cause = Cause::kUnknown, .first_here = true, .minute = 0},
        {.cause = Cause::kUnknown,
         .step = Step{"step", 300},
         .first_here = true,
         .minute = 20,
         .expected = Action::kRetry},
        {.cause = Cause::kUnknown,
         .step = Step{"step", 600},
         .first_here = true,
         .minute = 40,
         .expected = Action::kExcludeNode}}},
      {"first to fail three times with the job's own error: never exclude_node",
       {{.step = Step{"step", 10}, .first_here = true, .minute = 0},
        {.step = Step{"step", 20}, .first_here = true, .minute = 20, .expected = Action::kRetry},
        {.step = Step{"step", 30}, .first_here = true, .minute = 40, .expected = Action::kRetry}}},
      {"another node failed first in the middle attempt: the streak is broken",
       {{.cause = Cause::kUnknown, .first_here = true, .minute = 0},
        {.kind = "peer", .cause = Cause::kUnknown, .minute = 20},
        {.cause = Cause::kUnknown,
         .step = Step{"step", 5},
         .first_here = true,
         .minute = 40,
         .expected = Action::kRetry}}},
      {"a device failure after a reboot: exclude_node, the remedy did not work",
       {{.kind = "device",
         .fingerprint = "xid79",
         .cause = Cause::kHardware,
         .rules_action = Action::kRebootNode,
         .first_here = true,
         .boot = "boot-1",
         .minute = 0,
         .expected = Action::kRebootNode},
        {.kind = "device",
         .fingerprint = "xid79",
         .cause = Cause::kHardware,
         .rules_action = Action::kRebootNode,
         .first_here = true,
         .boot = "boot-2",
         .minute = 30,
         .expected = Action::kExcludeNode,
         .remedy_failed = true}}},
      {"a driver failure again on the same boot: exclude_node",
       {{.kind = "device",
         .fingerprint = "hl1",
         .cause = Cause::kDriver,
         .rules_action = Action::kRebootNode,
         .minute = 0,
         .expected = Action::kRebootNode},
        {.kind = "device",
         .fingerprint = "hl2",
         .cause = Cause::kDriver,
         .rules_action = Action::kRebootNode,
         .minute = 10,
         .expected = Action::kExcludeNode}}},
      {"the same hang at the same step: cancel_retries (a deadlock the job always reaches)",
       {{.kind = "hang",
         .fingerprint = "h",
         .cause = Cause::kUnknown,
         .step = Step{"step", 50},
         .minute = 0},
        {.kind = "hang",
         .fingerprint = "h",
         .cause = Cause::kUnknown,
         .step = Step{"step", 50},
         .minute = 40},
        {.kind = "hang",
         .fingerprint = "h",
         .cause = Cause::kUnknown,
         .step = Step{"step", 50},
         .minute = 80,
         .expected = Action::kCancelRetries}}},
      {"a budget of 2: the second same failure without progress cancels",
       {{.step = Step{"step", 7}, .minute = 0},
        {.step = Step{"step", 7}, .minute = 10, .expected = Action::kCancelRetries}},
       budget2},
      {"bars of other epochs cannot be compared: counted as progress, never cancelled",
       {{.step = Step{"Epoch 1", 90}, .minute = 0},
        {.step = Step{"Epoch 2", 40}, .minute = 15, .expected = Action::kRetry},
        {.step = Step{"Epoch 3", 10}, .minute = 30, .expected = Action::kRetry}}},
      {"a slowdown is no failure: it neither counts nor breaks a streak",
       {{.step = Step{"step", 70}, .minute = 0},
        {.kind = "slow", .fingerprint = "s", .step = Step{"step", 40}, .minute = 5},
        {.step = Step{"step", 70}, .minute = 10},
        {.step = Step{"step", 70}, .minute = 20, .expected = Action::kCancelRetries}}},
  };
}

TEST(RetryPolicy, EveryScenarioOfTheTableGetsItsDecisions) {
  const std::vector<Scenario> scenarios = Scenarios();
  ASSERT_GE(scenarios.size(), 12u);
  for (const Scenario& scenario : scenarios) {
    SCOPED_TRACE(scenario.name);
    AttemptLedger ledger;
    std::uint32_t pid = 100;
    for (std::size_t i = 0; i < scenario.attempts.size(); ++i) {
      SCOPED_TRACE("attempt " + std::to_string(i + 1));
      const Failed& failed = scenario.attempts[i];
      detect::AttemptPlace place;
      place.boot_id = failed.boot;
      place.pids = {static_cast<int>(pid += 10)};  // each attempt a new process
      if (failed.step) {
        place.step = detect::JobStep{failed.step->label, failed.step->count};
      }
      place.failed_first = failed.first_here;
      AttemptEntry entry;
      entry.job_id = "job-7";
      entry.incident_id = "incident-" + std::to_string(i + 1);
      entry.place = ledger.Place("job-7", place);
      entry.kind = failed.kind;
      entry.fingerprint = failed.fingerprint;
      entry.cause = failed.cause;
      entry.action = failed.rules_action;
      entry.opened = kStart + minutes(failed.minute);
      EXPECT_EQ(entry.place.number, i + 1);
      const RetryDecision decision =
          DecideRetry(ledger.Before("job-7", entry.place.number), entry, scenario.config);
      EXPECT_EQ(rules::ActionName(decision.action), rules::ActionName(failed.expected))
          << decision.why;
      EXPECT_EQ(decision.remedy_failed, failed.remedy_failed) << decision.why;
      if (decision.action != failed.rules_action) {
        EXPECT_FALSE(decision.why.empty());  // every change says why
      }
      entry.action = decision.action;
      ledger.Add(entry);
    }
  }
}

TEST(RetryPolicy, TheReasonsSayWhichAttemptsAndHowFar) {
  AttemptLedger ledger;
  std::vector<AttemptEntry> earlier;
  for (std::uint32_t n = 1; n <= 2; ++n) {
    AttemptEntry entry;
    entry.place.number = n;
    entry.place.step = detect::JobStep{"step", 1200};
    entry.kind = "crash";
    entry.fingerprint = "f";
    entry.opened = kStart + minutes(20 * n);
    earlier.push_back(entry);
  }
  AttemptEntry third = earlier.back();
  third.place.number = 3;
  third.opened = kStart + minutes(60);
  const RetryDecision decision = DecideRetry(earlier, third, {});
  EXPECT_EQ(decision.action, Action::kCancelRetries);
  EXPECT_EQ(decision.why,
            "attempts 1, 2 and 3 failed the same way, none getting further than step 1,200: "
            "retrying repeats it");
  EXPECT_EQ(decision.same_as, (std::vector<std::uint32_t>{1, 2}));
  // Below the budget the record says how close it is.
  const RetryDecision second = DecideRetry({earlier[0]}, earlier[1], {});
  EXPECT_EQ(second.action, Action::kInspect);
  EXPECT_EQ(second.why,
            "the 2nd attempt in a row to fail the same way without getting further; "
            "cancel_retries at 3");
}

TEST(RetryPolicy, AManualSnapshotOrAWarningGetsNoDecision) {
  AttemptEntry entry;
  entry.kind = "warning";
  entry.action = Action::kInspect;
  const RetryDecision decision = DecideRetry({}, entry, {});
  EXPECT_EQ(decision.action, Action::kInspect);
  EXPECT_TRUE(decision.why.empty());
}

TEST(RetryPolicy, StepsCompareOnlyOnTheSameBar) {
  EXPECT_TRUE(GotFurther(std::nullopt, detect::JobStep{"step", 1}));
  EXPECT_FALSE(GotFurther(detect::JobStep{"step", 1}, std::nullopt));
  EXPECT_FALSE(GotFurther(std::nullopt, std::nullopt));
  EXPECT_FALSE(GotFurther(detect::JobStep{"step", 9}, detect::JobStep{"step", 9}));
  EXPECT_TRUE(GotFurther(detect::JobStep{"step", 9}, detect::JobStep{"step", 10}));
  EXPECT_TRUE(GotFurther(detect::JobStep{"Epoch 1", 9}, detect::JobStep{"Epoch 2", 1}));
  EXPECT_EQ(detect::StepText(detect::JobStep{"step", 1234567}), "step 1,234,567");
  EXPECT_EQ(detect::StepText(detect::JobStep{"Epoch 2", 40}), "'Epoch 2' 40");
  EXPECT_EQ(detect::StepText(std::nullopt), "no step");
  detect::AttemptPlace place;
  place.number = 3;
  place.step = detect::JobStep{"step", 1200};
  place.same_as = {1, 2};
  EXPECT_EQ(detect::AttemptText(place),
            "attempt 3 of the job; the same failure at step 1,200 as attempts 1 and 2");
  place.same_as = {};
  EXPECT_EQ(detect::AttemptText(place), "attempt 3 of the job (at step 1,200)");
}

}  // namespace
}  // namespace trainwatch::ops
