// IncidentSink: what hears of an incident's life, in the spirit of node-problem-detector's
// Exporter but for the whole of it: firings joining it, its record written, its capture
// ended, its resolution, the daemon stopping. The incident log, the daemon's own log, the
// metrics, the hooks, Alertmanager and the shared directory are each one sink; the daemon lists
// them once (app/daemon_sinks.cpp) and IncidentFlow tells each, in that order. Every event has
// an empty default: a sink overrides what it cares for. Loop thread only.
#pragma once

#include <cstdint>
#include <string>

#include "capture/capture_types.h"
#include "config/daemon_config.h"
#include "detect/incident.h"
#include "detect/incident_builder.h"
#include "ops/daemon_snapshot.h"
#include "ops/firing_log.h"
#include "ops/incident_lifecycle.h"
#include "ops/incident_log.h"
#include "ops/scheduler_action.h"

namespace trainwatch::incident {

// What a sink may ask of the pipeline it is plugged into (IncidentFlow).
class Pipeline {
 public:
  virtual ~Pipeline() = default;
  // Whether incident `id` is followed to its resolution (not a manual snapshot, a peer
  // capture or warnings alone, and not resolved yet).
  virtual bool Follows(const std::string& id) const = 0;
  // The incident firings join now (within its settle time), if any.
  virtual const detect::Incident* Settling() const = 0;
  // Records and captures an incident for another node's failure of a job that runs here.
  virtual void OpenPeerIncident(detect::PeerLink link) = 0;
  // A sink did something about an incident in the scheduler (or decided not to): every sink
  // hears of it (Acted), the log records it.
  virtual void TellActed(const ops::SchedulerAction& action) = 0;
};

class IncidentSink {
 public:
  virtual ~IncidentSink() = default;

  // At start and at each reload.
  virtual void Configure(const config::DaemonConfig& /*config*/) {}
  // Once, before the first firing: what incidents.jsonl says of earlier runs.
  virtual void Restore(const ops::IncidentHistory& /*history*/) {}
  // Once, configured and restored: the daemon watches its sources now.
  virtual void Started() {}
  // A firing the incident builder disposed of; `open` is the incident settling after it.
  virtual void Fired(const ops::FiringLog::Said& /*firing*/,
                     detect::IncidentBuilder::Disposition /*disposition*/,
                     const detect::Incident* /*open*/) {}
  // The incident settled and is recorded now, its job and recurrence known; its capture
  // starts next (when one is made).
  virtual void Recorded(const detect::Incident& /*incident*/) {}
  // No incident settles any more (the one settling was recorded, or came to nothing).
  virtual void SettleEnded() {}
  // A node of `incident`'s job (its job identity set) that told of a failure of the job after
  // `since` and before this one opened, if this sink knows of one (the shared directory's
  // records): this node was not the first to fail. Empty: none known.
  virtual std::string EarlierFailureElsewhere(const detect::Incident& /*incident*/,
                                              detect::WallTime /*since*/) const {
    return {};
  }
  // What the sink adds to a capture's request before it starts.
  virtual void AddToCapture(capture::CaptureRequest& /*request*/) const {}
  // The capture's early bundle is on disk (`early.error` says what it still lacks); the
  // complete one replaces it under the same name, and Captured follows.
  virtual void EarlyCaptured(const capture::CaptureOutcome& /*early*/) {}
  // A capture ended: its bundle was written, or why not (in the outcome).
  virtual void Captured(const capture::CaptureOutcome& /*outcome*/) {}
  // The incident is done with: captured or not (capture off, warnings), with why there is no
  // bundle. `facts` is the incident without its firing lines, its verdict the stacks' where its
  // rules could not say (ConcludedFacts).
  virtual void Concluded(const detect::Incident& /*facts*/,
                         const capture::CaptureOutcome& /*outcome*/) {}
  // The daemon stopped during the capture: the outcome says so (an early bundle may stay).
  virtual void CaptureInterrupted(const capture::CaptureOutcome& /*outcome*/) {}
  // `firing`, a hang of the job of incident `incident_id` soon after it failed, joined that
  // incident instead of opening one (incident/follow_ups.h); `why` says so in words.
  virtual void FollowedUp(const std::string& /*incident_id*/, const detect::Firing& /*firing*/,
                          const std::string& /*why*/) {}
  // What was done about an incident in the scheduler (Pipeline::TellActed).
  virtual void Acted(const ops::SchedulerAction& /*action*/) {}
  // A followed incident resolved (progress, a restart, an ack).
  virtual void Resolved(const ops::Resolution& /*resolution*/) {}
  // The daemon stops: what runs is killed, what waits is dropped.
  virtual void Stopping() {}

  // Nothing runs or waits in the sink (the daemon may be waiting to stop).
  virtual bool idle() const { return true; }
  virtual void FillSnapshot(ops::DaemonSnapshot& /*snapshot*/) const {}
  // A number that moves whenever what FillSnapshot shows does (the metrics are rewritten).
  virtual std::uint64_t Activity() const { return 0; }
};

// The incident as the sinks hear it once concluded: a hang whose rules could not say whose
// fault it is (cause unknown) takes what the ranks' stacks say, when they say it (a collective
// mismatch, a deadlock): their cause, action and sentence as its verdict.
detect::Incident ConcludedFacts(const detect::Incident& facts,
                                const capture::CaptureOutcome& outcome);

}  // namespace trainwatch::incident
