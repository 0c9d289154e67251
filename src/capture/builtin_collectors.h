// The in-process collectors of a capture, in the bundle's order: the incident and its firing
// lines, the environment of the job's processes (live and exited, redacted), processes,
// Python packages, system facts, disk usage, log tails, $HABANA_LOGS and extra paths.
// Blocking (they read /proc and files): the Capturer runs them on the thread pool. The reads
// that a job's user can wedge — the Python packages below each rank's root (a venv on a FUSE
// mount of theirs), the disk usage, log tails and extra paths of the paths the job and its
// user name — each run under kUserReadDeadline, charged to that user's budget
// (core/deadline_call.h): past it the collector says it timed out and what it left behind, and
// the read waits on a thread of its own, not on the pool's.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "capture/bundle_contents.h"
#include "capture/capturer.h"
#include "collect/redactor.h"
#include "config/capture_config.h"
#include "core/deadline_call.h"

namespace trainwatch::capture {

// Each of those collectors, at most: milliseconds as a rule, seconds on a slow NFS.
inline constexpr std::chrono::milliseconds kUserReadDeadline{10000};

// `bundles_dir` joins the watched folders for disk usage; redactions are counted into
// `redactions`. The reads above are charged to the budget of the one user who runs the job's
// processes (read below `proc_root`); of several users', or none known, to the shared budget.
CollectorResults RunBuiltinCollectors(const CaptureRequest& request,
                                      const config::CaptureConfig& config,
                                      const std::string& bundles_dir,
                                      const collect::Redactor& redactor,
                                      collect::RedactionCounts& redactions,
                                      const std::string& proc_root);

// `collect()` under `deadline`, charged to `budget`: its result; or one named `name` that is
// kTimedOut when it missed the deadline (left behind), kSkipped when it was not tried (the
// budget's reads are stuck already), kFailed when it threw, its detail naming `what` was not
// read ("the tails of /data/run.log") and why.
collect::CollectorResult CollectWithDeadline(const std::string& name, const std::string& what,
                                             std::function<collect::CollectorResult()> collect,
                                             std::chrono::milliseconds deadline,
                                             const DeadlineBudget& budget);

}  // namespace trainwatch::capture
