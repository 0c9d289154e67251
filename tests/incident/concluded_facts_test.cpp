// What every sink hears once an incident is concluded, the on_incident hooks among them: for a
// hang its rules could not explain, the stacks' verdict (a collective mismatch, a deadlock).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "incident/hook_sink.h"
#include "support/fake_env.h"

namespace trainwatch::incident {
namespace {

using testing::FakeEnv;

std::string EnvOf(const FakeEnv::Child& child, const std::string& name) {
  for (const std::string& entry : child.options.extra_env) {
    if (entry.starts_with(name + "=")) {
      return entry.substr(name.size() + 1);
    }
  }
  return "(unset)";
}

class HookSinkTest : public ::testing::Test {
 protected:
  HookSinkTest() : sink_(env_, "/state/incidents.jsonl", [] {}) {
    config::DaemonConfig config;
    config::CommandConfig hook;
    hook.name = "page";
    hook.argv = {"/usr/local/bin/page-oncall"};
    config.on_incident = {hook};
    sink_.Configure(config);
    hang_.id = "i-1";
    hang_.kind = rules::RuleKind::kHang;
    hang_.summary = "'step' at 15 has not advanced for 3s";
    hang_.verdict.why = "test.stall (unknown)";
  }

  FakeEnv env_;
  HookSink sink_;
  detect::Incident hang_;
};

TEST_F(HookSinkTest, AHangTheRulesCouldNotExplainIsToldByItsStacks) {
  capture::CaptureOutcome outcome;
  outcome.incident_id = "i-1";
  outcome.path = "/state/bundles/b.tar.zst";
  outcome.stacks_say = diagnose::StackVerdict{
      "collective_mismatch",
      {rules::Cause::kApplication, rules::Action::kInspect},
      "collective mismatch: rank 2 in broadcast at job.py:154 while ranks 0, 1, 3 in all_reduce "
      "at job.py:157",
      {"rank 2"}};
  sink_.Concluded(ConcludedFacts(hang_, outcome), outcome);
  env_.RunUntilIdle();
  ASSERT_EQ(env_.children().size(), 1u);
  const FakeEnv::Child& hook = *env_.children()[0];
  EXPECT_EQ(EnvOf(hook, "TRAINWATCH_INCIDENT_CAUSE"), "application");
  EXPECT_EQ(EnvOf(hook, "TRAINWATCH_INCIDENT_VERDICT"),
            "the stacks: collective mismatch: rank 2 in broadcast at job.py:154 while ranks 0, "
            "1, 3 in all_reduce at job.py:157");
}

TEST_F(HookSinkTest, AVerdictTheRulesGaveStands) {
  hang_.verdict.verdict = {rules::Cause::kHardware, rules::Action::kExcludeNode};
  hang_.verdict.why = "nvidia.xid.79 (hardware)";
  capture::CaptureOutcome outcome;
  outcome.incident_id = "i-1";
  outcome.stacks_say = diagnose::StackVerdict{
      "all_waiting", {rules::Cause::kInfrastructure, rules::Action::kRetry}, "every rank", {}};
  sink_.Concluded(ConcludedFacts(hang_, outcome), outcome);
  env_.RunUntilIdle();
  ASSERT_EQ(env_.children().size(), 1u);
  EXPECT_EQ(EnvOf(*env_.children()[0], "TRAINWATCH_INCIDENT_CAUSE"), "hardware");
  EXPECT_EQ(EnvOf(*env_.children()[0], "TRAINWATCH_INCIDENT_VERDICT"), "nvidia.xid.79 (hardware)");
}

}  // namespace
}  // namespace trainwatch::incident
