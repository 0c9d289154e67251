// Where the daemon's incident sinks are listed, once (incident/incident_sink.h): the one place
// a new output (Kubernetes events, a Slurm action) is plugged in. Also the daemon's Sources as
// the pipeline's JobProcesses. Loop thread only.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "alert/alert_output.h"
#include "core/env.h"
#include "incident/incident_flow.h"
#include "incident/job_processes.h"
#include "watch/sources.h"

namespace trainwatch::app {

// The Sources are made after the flow (they start from its history): until then, none known.
class SourcesAsJobProcesses final : public incident::JobProcesses {
 public:
  explicit SourcesAsJobProcesses(const std::unique_ptr<watch::Sources>& sources)
      : sources_(sources) {}
  std::vector<source::WriterProcess> Known() override;
  void Rescan() override;
  void FillCapture(capture::CaptureRequest& request) override;
  std::optional<detect::JobStep> FurthestStep(const detect::Incident& incident) override;

 private:
  const std::unique_ptr<watch::Sources>& sources_;
};

struct SinkWiring {
  std::string state_dir;
  // False once the state_dir is another daemon's: nothing more is written there.
  std::function<bool()> may_write;
  // The last hook ended (the daemon may be waiting to stop).
  std::function<void()> hooks_idle;
  alert::AlertOutput::MakeClient make_http_client;
  // Lines for the `processes` sources (a device tool that does not answer).
  std::function<void(const std::vector<std::string>& lines)> tell_processes_sources;
};

// Plugs every sink into `flow`, in the order they hear of an incident.
void AddDaemonSinks(Env& env, incident::IncidentFlow& flow, incident::JobProcesses& processes,
                    const SinkWiring& wiring);

}  // namespace trainwatch::app
