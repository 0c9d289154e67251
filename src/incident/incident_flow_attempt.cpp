// IncidentFlow's attempts (incident/incident_flow.h): which attempt of its job an incident
// ends, and what the retry policy (ops/retry_policy.h) makes of it. Split from
// incident_flow.cpp; the same IncidentFlow, loop thread only.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "collect/rank_identity.h"
#include "core/proc_files.h"
#include "core/text_trim.h"
#include "detect/incident_json.h"
#include "detect/incident_root.h"
#include "incident/incident_flow.h"
#include "ops/retry_policy.h"

namespace trainwatch::incident {
namespace {

constexpr std::size_t kBootIdBytes = 64;

// Whether this node printed the failure itself: a rank's own error, or its device's.
bool FailedHere(const detect::Incident& incident) {
  if (incident.peer || !incident.reason.empty()) {
    return false;
  }
  return detect::RootError(incident.firings) != nullptr;
}

}  // namespace

std::vector<int> IncidentFlow::AttemptPids(const detect::Incident& incident) const {
  std::set<int> ranks;
  std::set<int> writers;
  auto add = [&](const source::WriterProcess& process) {
    (collect::RankInEnviron(process.environ) ? ranks : writers).insert(process.pid);
  };
  std::set<int> departed;
  for (const detect::Firing& firing : incident.firings) {
    std::for_each(firing.writers.begin(), firing.writers.end(), add);
    departed.insert(firing.departed_writers.begin(), firing.departed_writers.end());
  }
  const std::vector<source::WriterProcess> known = processes_.Known();
  for (const source::WriterProcess& process : known) {
    if (departed.contains(process.pid)) {
      add(process);
    }
  }
  if (ranks.empty() && writers.empty() && !incident.job.id.empty()) {
    // A kernel line: the job's ranks the sources know.
    for (const source::WriterProcess& process : known) {
      if (collect::RankInEnviron(process.environ) &&
          JobIdOf(detect::Firing{.writers = {process}}) == incident.job.id) {
        ranks.insert(process.pid);
      }
    }
  }
  const std::set<int>& pids = ranks.empty() ? writers : ranks;
  std::vector<int> sorted(pids.begin(), pids.end());
  sorted.resize(std::min(sorted.size(), ops::AttemptLedger::kMaxPids));
  return sorted;
}

void IncidentFlow::PlaceAttempt(detect::Incident& incident) {
  if (!incident.reason.empty() || (incident.kind == rules::RuleKind::kWarning && !incident.peer)) {
    return;  // a manual snapshot or warnings alone: no failure of an attempt
  }
  if (boot_id_.empty()) {
    if (Result<ProcText> boot =
            ReadProcFile(env_.proc_root() + "/sys/kernel/random/boot_id", kBootIdBytes)) {
      boot_id_ = std::string(Trim(boot->text, kWhiteSpace));
    }
  }
  detect::AttemptPlace place;
  place.marker = incident.job.restart;
  place.boot_id = boot_id_;
  place.pids = AttemptPids(incident);
  place.step = processes_.FurthestStep(incident);
  place = attempts_.Place(incident.job.id, std::move(place));
  if (FailedHere(incident)) {
    const std::vector<ops::AttemptEntry> before = attempts_.Before(incident.job.id, place.number);
    // Another node's failure since this attempt began (the last one ended) came first.
    const WallTime since = before.empty() ? WallTime{} : before.back().opened;
    std::string earlier;
    for (const std::unique_ptr<IncidentSink>& sink : sinks_) {
      if (earlier.empty()) {
        earlier = sink->EarlierFailureElsewhere(incident, since);
      }
    }
    place.failed_first = earlier.empty();
  }
  ops::AttemptEntry entry;
  entry.job_id = incident.job.id;
  entry.incident_id = incident.id;
  entry.place = std::move(place);
  entry.kind = detect::IncidentKindName(incident);
  entry.fingerprint = incident.fingerprint;
  entry.cause = incident.verdict.verdict.cause;
  entry.action = incident.verdict.verdict.action;
  entry.opened = incident.opened;
  const ops::RetryDecision decision =
      ops::DecideRetry(attempts_.Before(entry.job_id, entry.place.number), entry, config_.retry);
  if (decision.action != entry.action) {
    spdlog::info("incident {}: attempt {} of job '{}': {} rather than {}: {}", incident.id,
                 entry.place.number, entry.job_id, rules::ActionName(decision.action),
                 rules::ActionName(entry.action), decision.why);
    incident.verdict.verdict.action = decision.action;
  }
  if (!decision.why.empty()) {
    incident.verdict.why += "; " + decision.why;
  }
  entry.action = decision.action;
  entry.place.why = decision.why;
  entry.place.same_as = decision.same_as;
  entry.place.remedy_failed = decision.remedy_failed;
  incident.attempt = entry.place;
  attempts_.Add(entry);
}

}  // namespace trainwatch::incident
