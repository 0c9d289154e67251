// HookSink: the on_incident hooks (ops/hook_runner.h) as a sink — run once an incident is
// concluded, with its bundle (or why there is none) in their environment; killed or dropped
// when the daemon stops. Loop thread only.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "incident/incident_sink.h"
#include "ops/hook_runner.h"

namespace trainwatch::incident {

class HookSink final : public IncidentSink {
 public:
  // `on_idle`: each time the last hook ended (the daemon may be waiting to stop).
  HookSink(Env& env, std::string incidents_file, std::function<void()> on_idle);

  void Configure(const config::DaemonConfig& config) override;
  void Concluded(const detect::Incident& facts, const capture::CaptureOutcome& outcome) override {
    runner_.Run(facts, outcome.path, outcome.error, incidents_file_);
  }
  void Stopping() override { runner_.Abort(); }  // logs and counts what it kills or drops
  bool idle() const override { return runner_.idle(); }
  void FillSnapshot(ops::DaemonSnapshot& snapshot) const override;
  std::uint64_t Activity() const override;

 private:
  ops::HookRunner runner_;
  std::string incidents_file_;  // told to the hooks
  std::vector<std::string> names_;
};

}  // namespace trainwatch::incident
