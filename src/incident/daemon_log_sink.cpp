#include "incident/daemon_log_sink.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/quantity.h"
#include "detect/incident_json.h"
#include "ops/recurrence_book.h"

namespace trainwatch::incident {

void DaemonLogSink::Recorded(const detect::Incident& incident) {
  spdlog::warn(
      "incident {}: {} — {} ({} firing lines, rules: {}); cause {}, action {}: {}; fingerprint "
      "{}{}; job {} on {}",
      incident.id, detect::IncidentKindName(incident), incident.summary,
      incident.firings.size() + incident.more_firings,
      fmt::format("{}", fmt::join(incident.rules, ", ")),
      rules::CauseName(incident.verdict.verdict.cause),
      rules::ActionName(incident.verdict.verdict.action), incident.verdict.why,
      incident.fingerprint, ops::RecurrenceText(incident.recurrence),
      incident.job.id.empty() ? "unknown" : incident.job.id, incident.job.node);
}

void DaemonLogSink::EarlyCaptured(const capture::CaptureOutcome& early) {
  spdlog::info("incident {}: early bundle {} ({} bytes) {}", early.incident_id, early.path,
               early.bytes, early.error);
}

void DaemonLogSink::FollowedUp(const std::string& incident_id, const detect::Firing& firing,
                               const std::string& why) {
  firing_log_.FollowedUp(incident_id, ops::FiringLog::Describe(firing), why);
}

void DaemonLogSink::Captured(const capture::CaptureOutcome& outcome) {
  if (!outcome.path.empty()) {
    spdlog::warn("incident {}: bundle {} ({}{}, {:.1f} s after the first firing line)",
                 outcome.incident_id, outcome.path, FormatByteSize(outcome.bytes),
                 outcome.reduced ? ", reduced: " + outcome.error : "", outcome.since_first_firing);
  } else {
    spdlog::error("incident {}: no bundle: {}", outcome.incident_id, outcome.error);
  }
  if (!outcome.ranks_summary.empty()) {
    spdlog::warn("incident {}: {}", outcome.incident_id, outcome.ranks_summary);
  }
  if (outcome.stacks_say) {
    spdlog::warn("incident {}: the stacks say {} (cause {}, action {})", outcome.incident_id,
                 outcome.stacks_say->says, rules::CauseName(outcome.stacks_say->verdict.cause),
                 rules::ActionName(outcome.stacks_say->verdict.action));
  }
  if (!outcome.devices_note.empty()) {
    spdlog::warn("incident {}: {}", outcome.incident_id, outcome.devices_note);
  }
  for (const diagnose::Suspect& suspect : outcome.suspects) {
    spdlog::warn("incident {}: suspect {} (pid {}): {}", outcome.incident_id, suspect.label,
                 suspect.pid, suspect.reason);
  }
  for (const std::string& deleted : outcome.deleted) {
    spdlog::info("retention: removed {}", deleted);
  }
  if (!outcome.timed_out.empty()) {
    spdlog::warn("incident {}: collectors killed at their deadline: {}", outcome.incident_id,
                 fmt::format("{}", fmt::join(outcome.timed_out, ", ")));
  }
}

void DaemonLogSink::CaptureInterrupted(const capture::CaptureOutcome& outcome) {
  if (outcome.path.empty()) {
    spdlog::error("incident {}: no bundle: {}", outcome.incident_id, outcome.error);
  } else {
    spdlog::error("incident {}: {}: {}", outcome.incident_id, outcome.path, outcome.error);
  }
}

void DaemonLogSink::Resolved(const ops::Resolution& resolution) {
  const auto open_for = std::chrono::duration_cast<std::chrono::seconds>(
      std::max(WallTime::duration::zero(), resolution.at - resolution.opened));
  spdlog::info("incident {} resolved ({} s after it opened): {}", resolution.id, open_for.count(),
               resolution.why);
}

}  // namespace trainwatch::incident
