// IncidentLogSink: state_dir/incidents.jsonl as a sink — each incident's record, then its
// bundle's (or why there is none), then its resolution (ops/incident_log.h). At start it reports
// the incidents an earlier run left without a bundle, once. Loop thread only.
#pragma once

#include <functional>
#include <string>

#include "incident/incident_sink.h"
#include "ops/incident_log.h"

namespace trainwatch::incident {

class IncidentLogSink final : public IncidentSink {
 public:
  // `may_write`: false once the state_dir is another daemon's (nothing more is written there).
  IncidentLogSink(std::string path, const FileSystem& fs, std::function<bool()> may_write)
      : log_(std::move(path), fs), may_write_(std::move(may_write)) {}

  void Configure(const config::DaemonConfig& config) override {
    capture_enabled_ = config.capture.enabled;
  }
  void Started() override;
  void Recorded(const detect::Incident& incident) override;
  void Captured(const capture::CaptureOutcome& outcome) override;
  void CaptureInterrupted(const capture::CaptureOutcome& outcome) override;
  void FollowedUp(const std::string& incident_id, const detect::Firing& firing,
                  const std::string& why) override;
  void Resolved(const ops::Resolution& resolution) override;
  void Acted(const ops::SchedulerAction& action) override;
  // What a full disk refused is tried once more.
  void Stopping() override;

 private:
  void RecordBundle(const capture::CaptureOutcome& outcome);

  ops::IncidentLog log_;
  std::function<bool()> may_write_;
  bool capture_enabled_ = true;
};

}  // namespace trainwatch::incident
