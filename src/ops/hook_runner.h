// HookRunner: runs the operator's `on_incident` hooks once an incident's bundle is written (or
// known not to be): upload it with `aws s3 cp`, post to a chat webhook with `curl`. Each hook
// runs through CommandRunner — its own process group, SIGTERM then SIGKILL at its timeout —
// so the loop never waits on one. The incident's facts reach a hook in its environment:
//
//   TRAINWATCH_INCIDENT_ID, TRAINWATCH_INCIDENT_KIND (crash|hang|device|warning|manual),
//   TRAINWATCH_INCIDENT_RULE (the first rule), TRAINWATCH_INCIDENT_RULES (comma-separated),
//   TRAINWATCH_INCIDENT_SUMMARY, TRAINWATCH_BUNDLE (path; empty when none was written),
//   TRAINWATCH_BUNDLE_ERROR (why there is none, or why it is reduced), TRAINWATCH_INCIDENTS_FILE
//
// Incidents' hooks run one incident at a time, in order; a backlog beyond kMaxQueued
// incidents is dropped and counted. A hook that fails, times out or is missing is logged and
// counted, never fatal. Loop thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "collect/command_runner.h"
#include "config/capture_config.h"
#include "detect/incident.h"

namespace trainwatch::ops {

struct HookCounts {
  std::map<std::string, std::uint64_t> runs;      // by hook name: started
  std::map<std::string, std::uint64_t> failures;  // by hook name: non-zero, killed, missing
  std::uint64_t dropped = 0;                      // incidents whose hooks never ran (backlog)
};

class HookRunner {
 public:
  static constexpr std::size_t kMaxQueued = 16;

  explicit HookRunner(Env& env) : runner_(env, collect::CommandRunner::HungKey::kName) {}

  void Configure(std::vector<config::CommandConfig> hooks) { hooks_ = std::move(hooks); }
  // Runs the hooks that want `incident`, with the bundle's outcome in their environment.
  void Run(const detect::Incident& incident, const std::string& bundle,
           const std::string& bundle_error, const std::string& incidents_file);
  // No hook runs or waits.
  bool idle() const { return !running_ && queue_.empty(); }
  // Called each time the runner becomes idle (the daemon may be waiting to stop).
  void OnIdle(std::function<void()> callback) { on_idle_ = std::move(callback); }
  // Kills what runs and forgets what waits (the daemon is stopping), saying which: the killed
  // count as failures, the forgotten as dropped. Nothing is run again at the next start.
  void Abort();
  const HookCounts& counts() const { return counts_; }

 private:
  struct Batch {
    std::string incident_id;
    std::vector<config::CommandConfig> commands;
  };
  void StartNext();
  void OnDone(const Batch& batch, const std::vector<collect::CollectorResult>& results);

  collect::CommandRunner runner_;
  std::vector<config::CommandConfig> hooks_;
  std::deque<Batch> queue_;
  bool running_ = false;
  std::string running_incident_;
  HookCounts counts_;
  std::function<void()> on_idle_;
};

}  // namespace trainwatch::ops
