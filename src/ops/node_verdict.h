// The node verdict: is this node fit for the next job? One-shot, for a Slurm Prolog or
// HealthCheckProgram, or a Kubernetes init container (`trainwatch node-verdict`). Judged from
//  - the node's incidents (incidents.jsonl): a device or driver failure since the last boot
//    that no operator acknowledged is CRITICAL (what its rules said to do: reboot_node,
//    exclude_node), as is the retry policy's exclude_node for this node within kExclusionFor
//    (it failed first attempt after attempt, or its device failures came back) — a reboot does
//    not clear that, an ack does; a device failure the policy found back after a reboot says
//    the remedy did not work; a device failure of the day before the last boot is a WARNING
//    (the reboot may have fixed it);
//  - quick checks made now: the device tools answer within their deadline (one that hangs or
//    fails is CRITICAL: a wedged device or a lost driver), and no rank of a job is stuck in
//    the kernel (D state at every sample over two seconds: CRITICAL).
// PASS (exit 0), WARNING (1), CRITICAL (2), UNKNOWN (3: what it needs could not be read).
// The JSON form's schema is docs/node-verdict.md's. Pure functions; any thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collect/stuck_ranks.h"
#include "detect/incident.h"

namespace trainwatch::ops {

enum class Readiness { kPass, kWarning, kCritical, kUnknown };
std::string_view ReadinessName(Readiness readiness);  // "PASS", "WARNING", ...
int ExitCodeOf(Readiness readiness);                  // 0, 1, 2, 3

// How long the policy's exclude_node keeps a node CRITICAL without an ack.
inline constexpr std::chrono::hours kExclusionFor{7 * 24};
// How long a device failure the last reboot answered keeps the node at WARNING.
inline constexpr std::chrono::hours kRebootedWarnFor{24};

// One incident of the node, as the verdict needs it (its resolution joined).
struct NodeIncident {
  std::string id;
  std::string kind;
  std::string summary;
  rules::Cause cause = rules::Cause::kUnknown;
  std::string action;
  std::string job_id;
  std::string policy_why;  // the retry policy's reason, where it decided
  bool remedy_failed = false;
  detect::WallTime opened{};
  std::string resolved_how;  // "", "progress", "restart", "ack"
};

// The node's incidents in `text` (incidents.jsonl), oldest first; lines that are not whole
// incident or resolution records are skipped. At most kMaxNodeIncidents, the newest.
inline constexpr std::size_t kMaxNodeIncidents = 4096;
std::vector<NodeIncident> NodeIncidentsOf(std::string_view text);

// A device tool asked now.
struct DeviceCheck {
  std::string tool;  // "hl-smi"
  enum class Result {
    kAnswered,
    kFailed,
    kHung,
    kMissing,
    kNotPermitted
  } result = Result::kAnswered;
  std::string detail;  // its exit, or the tail of what it said
  double seconds = 0;
};

using collect::StuckRank;

struct NodeFacts {
  std::string node;
  detect::WallTime now{};
  std::optional<detect::WallTime> booted;  // unknown: every device failure counts
  std::string incidents_file;
  std::optional<std::string> incidents_error;  // unreadable (a missing file is none)
  std::vector<NodeIncident> incidents;
  std::vector<DeviceCheck> devices;
  std::size_t ranks_checked = 0;
  std::vector<StuckRank> stuck;
  std::optional<std::string> ranks_error;  // /proc could not be read
};

struct NodeReason {
  Readiness level = Readiness::kPass;
  std::string check;  // "incidents", "policy", "device", "ranks"
  std::string text;
  std::string action;  // what to do: "reboot_node", "exclude_node", "inspect"
  std::string incident;
};

struct NodeCheck {
  std::string check;
  std::string result;
};

struct NodeVerdict {
  Readiness level = Readiness::kPass;
  std::string node;
  detect::WallTime at{};
  std::vector<NodeReason> reasons;  // the worst first
  std::vector<NodeCheck> checks;    // what was looked at, each in a few words
};

NodeVerdict JudgeNode(const NodeFacts& facts);
// One JSON object (docs/node-verdict.md), without a newline.
std::string NodeVerdictJson(const NodeVerdict& verdict);
// "CRITICAL: node gpu-17 is not fit for a job\n  - ...\n" for a terminal or a log.
std::string NodeVerdictText(const NodeVerdict& verdict);

}  // namespace trainwatch::ops
