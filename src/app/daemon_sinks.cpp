#include "app/daemon_sinks.h"

#include "app/device_tool_sink.h"
#include "incident/alertmanager_sink.h"
#include "incident/daemon_log_sink.h"
#include "incident/hook_sink.h"
#include "incident/incident_log_sink.h"
#include "incident/metrics_sink.h"
#include "incident/shared_dir_link.h"
#include "slurm/slurm_drain_sink.h"

namespace trainwatch::app {

std::vector<source::WriterProcess> SourcesAsJobProcesses::Known() {
  return sources_ ? sources_->KnownWriters() : std::vector<source::WriterProcess>{};
}

void SourcesAsJobProcesses::Rescan() {
  if (sources_) {
    sources_->RequestWriterScan();
  }
}

void SourcesAsJobProcesses::FillCapture(capture::CaptureRequest& request) {
  if (sources_) {
    sources_->FillCapture(request);
  }
}

std::optional<detect::JobStep> SourcesAsJobProcesses::FurthestStep(
    const detect::Incident& incident) {
  return sources_ ? sources_->FurthestStep(incident) : std::nullopt;
}

void AddDaemonSinks(Env& env, incident::IncidentFlow& flow, incident::JobProcesses& processes,
                    const SinkWiring& wiring) {
  // The record first: whatever follows, the incident is on disk.
  flow.AddSink(std::make_unique<incident::IncidentLogSink>(flow.incidents_file(), env.fs(),
                                                           wiring.may_write));
  flow.AddSink(std::make_unique<incident::DaemonLogSink>());
  flow.AddSink(std::make_unique<incident::MetricsSink>());
  flow.AddSink(std::make_unique<incident::AlertmanagerSink>(
      env, flow, wiring.state_dir + "/alerts.json", wiring.make_http_client, wiring.may_write));
  flow.AddSink(std::make_unique<incident::SharedDirLink>(
      env, flow, processes, wiring.state_dir + "/outbox", wiring.may_write));
  flow.AddSink(std::make_unique<incident::HookSink>(env, flow.incidents_file(), wiring.hooks_idle));
  flow.AddSink(std::make_unique<slurm::SlurmDrainSink>(env, flow));
  flow.AddSink(std::make_unique<DeviceToolSink>(env, wiring.tell_processes_sources));
}

}  // namespace trainwatch::app
