// What a verdict means for a scheduler. Whether it blames the node (what drains it in Slurm,
// slurm/slurm_drain_sink.h, and fails the Epilog, slurm/job_outcome.h), and, for
// `trainwatch wrap --exit-codes verdict`, a failed command's exit status that says what its
// incident's verdict says, so that a scheduler's own policy can act on it without reading
// anything — Slurm's RequeueExit/RequeueExitHold, Kubernetes' podFailurePolicy.onExitCodes:
//   kExitDoNotRetry (90)  the job's own failure, or the retry policy says stop (cancel_retries,
//                         restart_storm): retrying repeats it;
//   kExitRetry (91)       infrastructure or an unknown cause: another attempt may pass;
//   kExitBadNode (92)     the verdict blames the node (BlamesTheNode): retry, elsewhere.
// A command that succeeded exits 0, and one with no failure incident keeps its own status (in
// wrap, the exit.failed rule records one for every other non-zero exit: cause unknown, 91).
// Pure; any thread.
#pragma once

#include <optional>

#include "rules/verdict.h"

namespace trainwatch::ops {

inline constexpr int kExitDoNotRetry = 90;
inline constexpr int kExitRetry = 91;
inline constexpr int kExitBadNode = 92;

// A hardware or driver cause: the node's devices, whatever the job does.
bool IsDeviceCause(rules::Cause cause);

// The verdict says the node is at fault: its action is exclude_node or reboot_node, and the
// failure is not the job's own (cause application). Never true of a capture made for another
// node's failure (the caller leaves those out).
bool BlamesTheNode(const rules::Verdict& verdict);

// `verdict`: the command's last failure incident's, if any; `status`: the command's own.
int VerdictExitCode(const std::optional<rules::Verdict>& verdict, int status);

}  // namespace trainwatch::ops
