#include "ops/verdict_exit_code.h"

namespace trainwatch::ops {

bool IsDeviceCause(rules::Cause cause) {
  return cause == rules::Cause::kHardware || cause == rules::Cause::kDriver;
}

bool BlamesTheNode(const rules::Verdict& verdict) {
  return verdict.cause != rules::Cause::kApplication &&
         (verdict.action == rules::Action::kExcludeNode ||
          verdict.action == rules::Action::kRebootNode);
}

int VerdictExitCode(const std::optional<rules::Verdict>& verdict, int status) {
  if (status == 0 || !verdict) {
    return status;
  }
  using rules::Action;
  using rules::Cause;
  if (BlamesTheNode(*verdict)) {
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
