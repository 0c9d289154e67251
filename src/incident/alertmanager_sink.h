// AlertmanagerSink: each followed incident as an alert in Prometheus Alertmanager
// (alert/alert_output.h) — posted when recorded, again with its bundle, ended when it resolves,
// its owed alerts kept in state_dir/alerts.json. Loop thread only.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "alert/alert_output.h"
#include "incident/incident_sink.h"

namespace trainwatch::incident {

class AlertmanagerSink final : public IncidentSink {
 public:
  // `store_path`: alerts.json; `make_client`: the HTTP client, made at the first config with
  // URLs (alert/alert_output.h); `may_write`: false once the state_dir is another daemon's.
  AlertmanagerSink(Env& env, const Pipeline& pipeline, std::string store_path,
                   alert::AlertOutput::MakeClient make_client, std::function<bool()> may_write);

  void Configure(const config::DaemonConfig& config) override {
    alerts_.Configure(config.alertmanager);
  }
  void Recorded(const detect::Incident& incident) override;
  // The bundle's path as soon as the early bundle is there: the on-call can open it while the
  // ranks' stacks are still being taken (the complete bundle keeps the name).
  void EarlyCaptured(const capture::CaptureOutcome& early) override;
  void Captured(const capture::CaptureOutcome& outcome) override;
  void Resolved(const ops::Resolution& resolution) override;
  void Stopping() override { alerts_.Stop(); }
  void FillSnapshot(ops::DaemonSnapshot& snapshot) const override;
  std::uint64_t Activity() const override;

 private:
  const Pipeline& pipeline_;
  alert::AlertOutput alerts_;
  std::function<bool()> may_write_;
};

}  // namespace trainwatch::incident
