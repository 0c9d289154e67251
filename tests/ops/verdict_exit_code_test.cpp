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
  EXPECT_EQ(VerdictExitCode(rules::Verdict{Cause::kHardware, Action::kInspect}, 134), kExitBadNode);
}

}  // namespace
}  // namespace trainwatch::ops
