// MetricsSink: what the metrics count of incidents — firings per rule, incidents by kind and
// by verdict, bundles written and failed, collectors that hung, resolutions by how
// (ops/daemon_counters.h) — for `trainwatch status` and the metrics textfile. Loop thread only.
#pragma once

#include <string>
#include <vector>

#include "incident/incident_sink.h"
#include "ops/daemon_counters.h"

namespace trainwatch::incident {

class MetricsSink final : public IncidentSink {
 public:
  void Configure(const config::DaemonConfig& config) override {
    collectors_ = config::CommandNames(config.capture.commands);
  }
  void Fired(const ops::FiringLog::Said& firing, detect::IncidentBuilder::Disposition disposition,
             const detect::Incident* open) override;
  void Recorded(const detect::Incident& incident) override;
  void Captured(const capture::CaptureOutcome& outcome) override {
    counters_.CountCapture(outcome, collectors_);
  }
  void Resolved(const ops::Resolution& resolution) override;
  void FillSnapshot(ops::DaemonSnapshot& snapshot) const override {
    snapshot.counters = counters_;
    snapshot.collectors = collectors_;
  }
  std::uint64_t Activity() const override { return counters_.Activity(); }

 private:
  ops::DaemonCounters counters_;
  std::vector<std::string> collectors_;  // the configured collectors' names
};

}  // namespace trainwatch::incident
