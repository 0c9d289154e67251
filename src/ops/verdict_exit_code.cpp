#include "ops/verdict_exit_code.h"

namespace trainwatch::ops {

int VerdictExitCode(const std::optional<rules::Verdict>& verdict, int status) {
  if (status == 0 || !verdict) {
    return status;
  }
  using rules::Action;
  using rules::Cause;
  if (verdict->action == Action::kExcludeNode || verdict->action == Action::kRebootNode ||
      verdict->cause == Cause::kHardware || verdict->cause == Cause::kDriver) {
    return kExitBadNode;
  }
  if (verdict->action == Action::kCancelRetries || verdict->action == Action::kRestartStorm) {
    return kExitDoNotRetry;
  }
  if (verdict->action == Action::kRetry) {
    return kExitRetry;  // the retry policy saw the attempts get further
  }
  return verdict->cause == Cause::kApplication ? kExitDoNotRetry : kExitRetry;
}

}  // namespace trainwatch::ops
