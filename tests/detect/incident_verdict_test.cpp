#include "detect/incident_verdict.h"

#include <gtest/gtest.h>

namespace trainwatch::detect {
namespace {

using rules::Action;
using rules::Cause;
using rules::RuleKind;

Event Fired(std::string rule, RuleKind kind, Cause cause, Action action) {
  Event event;
  event.rule_id = std::move(rule);
  event.kind = kind;
  event.verdict = {cause, action};
  return event;
}

const Event kTimeout =
    Fired("pytorch.nccl.watchdog_timeout", RuleKind::kCrash, Cause::kUnknown, Action::kInspect);
const Event kTraceback =
    Fired("python.traceback", RuleKind::kCrash, Cause::kApplication, Action::kInspect);
const Event kXid =
    Fired("nvidia.xid.device_fatal", RuleKind::kDevice, Cause::kHardware, Action::kExcludeNode);

TEST(VerdictTally, ADeviceErrorOutranksTheTimeoutsItCausedWhateverTheOrder) {
  for (bool device_first : {true, false}) {
    VerdictTally tally;
    if (device_first) {
      tally.Add(kXid);
    }
    for (int rank = 0; rank < 8; ++rank) {
      tally.Add(kTimeout);
      tally.Add(kTraceback);
    }
    if (!device_first) {
      tally.Add(kXid);
    }
    const IncidentVerdict verdict = tally.Result();
    EXPECT_EQ(verdict.verdict, (rules::Verdict{Cause::kHardware, Action::kExcludeNode}));
    EXPECT_EQ(verdict.rule, "nvidia.xid.device_fatal");
    EXPECT_NE(verdict.why.find("nvidia.xid.device_fatal (hardware) outranks "), std::string::npos)
        << verdict.why;
    EXPECT_NE(verdict.why.find("pytorch.nccl.watchdog_timeout (unknown)"), std::string::npos);
    EXPECT_NE(verdict.why.find("python.traceback (application)"), std::string::npos);
  }
}

TEST(VerdictTally, AmongEqualCausesTheFirstToFireDecides) {
  VerdictTally tally;
  tally.Add(
      Fired("pytorch.cuda.oom", RuleKind::kCrash, Cause::kApplication, Action::kCancelRetries));
  tally.Add(kTraceback);
  const IncidentVerdict verdict = tally.Result();
  EXPECT_EQ(verdict.verdict.action, Action::kCancelRetries);
  EXPECT_EQ(verdict.why, "pytorch.cuda.oom (application)");
}

TEST(VerdictTally, AHangAloneNeverExcludesANode) {
  VerdictTally tally;
  tally.Add(Fired("site.stall", RuleKind::kHang, Cause::kHardware, Action::kExcludeNode));
  IncidentVerdict verdict = tally.Result();
  EXPECT_EQ(verdict.verdict, (rules::Verdict{Cause::kHardware, Action::kInspect}));
  EXPECT_NE(verdict.why.find("a hang alone never excludes a node"), std::string::npos);
  // With the device's own error it does.
  tally.Add(kXid);
  EXPECT_EQ(tally.Result().verdict.action, Action::kExcludeNode);
}

TEST(VerdictTally, WarningsDecideOnlyWhenNothingElseFired) {
  VerdictTally tally;
  tally.Add(Fired("nvidia.xid.other", RuleKind::kWarning, Cause::kDriver, Action::kInspect));
  EXPECT_EQ(tally.Result().verdict.cause, Cause::kDriver);
  tally.Add(kTimeout);
  EXPECT_EQ(tally.Result().verdict.cause, Cause::kUnknown);
  EXPECT_EQ(tally.Result().rule, "pytorch.nccl.watchdog_timeout");
  EXPECT_TRUE(VerdictTally().Result().rule.empty());
}

}  // namespace
}  // namespace trainwatch::detect
