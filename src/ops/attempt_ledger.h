// AttemptLedger: each job's attempts as this node saw them fail. An attempt is one run of the
// job's processes: a torchrun/elastic restart, a Slurm requeue or a new run of the same job id
// is the next one. Per attempt it keeps its failure (the latest incident that stopped it: a
// crash, hang or device failure outranks a slowdown or a peer's capture), the furthest step the
// job reached, whether this node failed first, and the node's boot — what the retry policy
// (ops/retry_policy.h) decides from. It is no file of its own: incidents.jsonl records
// each incident's place ("attempt"), and the ledger is read back from there at start
// (ParseIncidentHistory), so a restarted daemon goes on counting. Bounded: kMaxJobs jobs (the
// longest quiet forgotten first), kMaxAttempts each. Value type; loop thread.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "detect/incident.h"

namespace trainwatch::ops {

// One attempt's failure, as the ledger and the policy see it.
struct AttemptEntry {
  std::string job_id;  // empty: the node's job of unknown id
  std::string incident_id;
  detect::AttemptPlace place;
  std::string kind;  // "crash", "hang", "device", "slow", "peer", ...
  std::string fingerprint;
  rules::Cause cause = rules::Cause::kUnknown;
  rules::Action action = rules::Action::kInspect;  // as decided
  detect::WallTime opened{};
};

// The entry of an incident record of incidents.jsonl that has an "attempt"; none otherwise.
std::optional<AttemptEntry> AttemptEntryOf(const nlohmann::ordered_json& record);

// Whether `kind` ends an attempt: a crash, a hang, a device failure, a loss gone NaN (a
// slowdown, a warning or a manual snapshot does not; a peer's capture says another node's
// failure ended it).
bool EndsAttempt(const std::string& kind);

class AttemptLedger {
 public:
  static constexpr std::size_t kMaxJobs = 64;
  static constexpr std::size_t kMaxAttempts = 32;
  // Pids kept per attempt, to tell the next one (AttemptPlace::pids).
  static constexpr std::size_t kMaxPids = 64;

  // The entries incidents.jsonl holds, oldest first.
  void Restore(const std::vector<AttemptEntry>& entries);

  // Where `incident` (its job and fingerprint known) falls: the job's latest attempt when its
  // processes are the same ones (the launcher's restart count agrees, or they share a pid, on
  // the same boot), else the next. `place` carries the incident's marker, pids, boot and step.
  detect::AttemptPlace Place(const std::string& job_id, detect::AttemptPlace place) const;
  // The job's attempts before `number`, oldest first (one entry each).
  std::vector<AttemptEntry> Before(const std::string& job_id, std::uint32_t number) const;
  // Enters `entry` (placed by Place): a new attempt, or the latest one's failure updated.
  void Add(const AttemptEntry& entry);
  // The job's attempts, oldest first.
  std::vector<AttemptEntry> Of(const std::string& job_id) const;

 private:
  std::map<std::string, std::vector<AttemptEntry>> jobs_;
};

}  // namespace trainwatch::ops
