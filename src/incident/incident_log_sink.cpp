#include "incident/incident_log_sink.h"

#include <spdlog/spdlog.h>

#include "ops/uncaptured_incidents.h"

namespace trainwatch::incident {

void IncidentLogSink::Started() {
  if (!capture_enabled_) {
    return;  // no bundle was wanted
  }
  for (const ops::UncapturedIncident& incident :
       ops::FindUncapturedIncidents(log_.path(), ops::IncidentLog::kTailBytes)) {
    spdlog::error(
        "incident {} (opened {}: {}) has no bundle: the daemon stopped during its "
        "capture; what its logs said is in {}, and `trainwatch snapshot` captures the "
        "state now",
        incident.id, incident.opened, incident.summary, log_.path());
    capture::CaptureOutcome outcome;
    outcome.incident_id = incident.id;
    outcome.error = std::string(ops::kReportedAtStart);
    RecordBundle(outcome);
  }
}

void IncidentLogSink::Recorded(const detect::Incident& incident) {
  if (Status written = log_.Append(incident); !written) {
    // The incident still counts; the next one may find space again.
    spdlog::error("incident {} could not be recorded: {}", incident.id, written.error().message);
  }
}

void IncidentLogSink::Captured(const capture::CaptureOutcome& outcome) {
  if (may_write_()) {
    RecordBundle(outcome);
  }
}

void IncidentLogSink::CaptureInterrupted(const capture::CaptureOutcome& outcome) {
  RecordBundle(outcome);
}

void IncidentLogSink::FollowedUp(const std::string& incident_id, const detect::Firing& firing,
                                 const std::string& why) {
  if (!may_write_()) {
    return;
  }
  if (Status recorded = log_.AppendFollowUp(incident_id, firing, why); !recorded) {
    spdlog::error("cannot record the follow-up of incident {}: {}", incident_id,
                  recorded.error().message);
  }
}

void IncidentLogSink::Resolved(const ops::Resolution& resolution) {
  if (!may_write_()) {
    return;
  }
  if (Status recorded = log_.AppendResolved(resolution); !recorded) {
    spdlog::error("cannot record that incident {} resolved: {}", resolution.id,
                  recorded.error().message);
  }
}

void IncidentLogSink::Acted(const ops::SchedulerAction& action) {
  if (!may_write_()) {
    return;
  }
  if (Status recorded = log_.AppendSchedulerAction(action); !recorded) {
    spdlog::error("cannot record what was done about incident {} in the scheduler: {}",
                  action.incident_id, recorded.error().message);
  }
}

void IncidentLogSink::Stopping() {
  if (Status flushed = log_.Flush(); !flushed) {
    spdlog::error("at the stop, {}: lost", flushed.error().message);
  }
}

void IncidentLogSink::RecordBundle(const capture::CaptureOutcome& outcome) {
  if (Status recorded = log_.AppendBundle(outcome); !recorded) {
    spdlog::error("cannot record the bundle of incident {}: {}", outcome.incident_id,
                  recorded.error().message);
  }
}

}  // namespace trainwatch::incident
