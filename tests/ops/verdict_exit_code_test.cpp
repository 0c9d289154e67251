#include "ops/verdict_exit_code.h"

#include <gtest/gtest.h>

namespace trainwatch::ops {
namespace {

using rules::Action;
using rules::Cause;

TEST(VerdictExitCode, MapsEachVerdictToWhatASchedulerDoesWithIt) {
  EXPECT_EQ(VerdictExitCode(rules::Verdict{Cause::kApplication, Action::kInspect}, 0), 0);
  EXPECT_EQ(VerdictExitCode(std::nullopt, 137), 137);  // no incident: the command's own
  EXPECT_EQ(VerdictExitCode(rules::Verdict{Cause::kApplication, Action::kInspect}, 1),
            kExitDoNotRetry);
  EXPECT_EQ(VerdictExitCode(rules::Verdict{Cause::kApplication, Action::kRetry}, 1), kExitRetry);
  EXPECT_EQ(VerdictExitCode(rules::Verdict{Cause::kUnknown, Action::kCancelRetries}, 1),
            kExitDoNotRetry);
  EXPECT_EQ(VerdictExitCode(rules::Verdict{Cause::kInfrastructure, Action::kRestartStorm}, 1),
            kExitDoNotRetry);
  EXPECT_EQ(VerdictExitCode(rules::Verdict{Cause::kInfrastructure, Action::kInspect}, 1),
            kExitRetry);
  EXPECT_EQ(VerdictExitCode(rules::Verdict{Cause::kUnknown, Action::kExcludeNode}, 1),
            kExitBadNode);
  EXPECT_EQ(VerdictExitCode(rules::Verdict{Cause::kHardware, Action::kRebootNode}, 134),
            kExitBadNode);
  // The same test as the drain's: a device cause whose rule only says inspect blames no node,
  // and the job's own failure never does, whatever its action.
  EXPECT_EQ(VerdictExitCode(rules::Verdict{Cause::kDriver, Action::kInspect}, 1), kExitRetry);
  EXPECT_EQ(VerdictExitCode(rules::Verdict{Cause::kApplication, Action::kExcludeNode}, 1),
            kExitDoNotRetry);
  EXPECT_TRUE(BlamesTheNode({Cause::kUnknown, Action::kExcludeNode}));
  EXPECT_FALSE(BlamesTheNode({Cause::kApplication, Action::kRebootNode}));
  EXPECT_FALSE(BlamesTheNode({Cause::kHardware, Action::kInspect}));
}

}  // namespace
}  // namespace trainwatch::ops
