// DaemonLogSink: what the daemon's own log (the journal) says of incidents — each firing once
// (ops/firing_log.h: a flood of matching lines is counted, not logged), each incident as it is
// recorded with its verdict, its bundle and suspects, an interrupted capture, a resolution.
// Loop thread only.
#pragma once

#include "incident/incident_sink.h"
#include "ops/firing_log.h"

namespace trainwatch::incident {

class DaemonLogSink final : public IncidentSink {
 public:
  void Fired(const ops::FiringLog::Said& firing, detect::IncidentBuilder::Disposition disposition,
             const detect::Incident* open) override {
    firing_log_.Record(firing, disposition, open);
  }
  void Recorded(const detect::Incident& incident) override;
  void EarlyCaptured(const capture::CaptureOutcome& early) override;
  void Captured(const capture::CaptureOutcome& outcome) override;
  void CaptureInterrupted(const capture::CaptureOutcome& outcome) override;
  void FollowedUp(const std::string& incident_id, const detect::Firing& firing,
                  const std::string& why) override;
  void Resolved(const ops::Resolution& resolution) override;
  void FillSnapshot(ops::DaemonSnapshot& snapshot) const override {
    snapshot.firings_without_incident = firing_log_.quiet_firings();
  }

 private:
  ops::FiringLog firing_log_;
};

}  // namespace trainwatch::incident
