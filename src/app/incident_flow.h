// IncidentFlow: from firings to a recorded, captured incident. Firings join the open incident
// (settle, cooldown: IncidentBuilder); a settled one is appended to incidents.jsonl at once,
// then captured into a bundle, then its on_incident hooks run. Logs each firing once per run,
// counts everything for the metrics. Owned by the Daemon; loop thread only.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "alert/alert_output.h"
#include "alert/http_client.h"
#include "capture/capturer.h"
#include "capture/job_identity.h"
#include "cluster/job_book.h"
#include "cluster/peer_record.h"
#include "cluster/peer_trust.h"
#include "cluster/peer_watcher.h"
#include "cluster/shared_publisher.h"
#include "config/daemon_config.h"
#include "core/env.h"
#include "detect/incident_builder.h"
#include "detect/stream_detector.h"
#include "ops/daemon_counters.h"
#include "ops/daemon_snapshot.h"
#include "ops/firing_log.h"
#include "ops/hook_runner.h"
#include "ops/incident_lifecycle.h"
#include "ops/incident_log.h"
#include "ops/recurrence_book.h"

namespace trainwatch::app {

class IncidentFlow {
 public:
  struct Hooks {
    // Adds what the sources know (log files, processes, watched dirs) to a capture.
    std::function<void(capture::CaptureRequest& request)> fill_capture;
    // An incident was written: the streams may release the offsets they held for it.
    std::function<void()> written;
    // A capture or its hooks finished (the wrap may be waiting to exit).
    std::function<void()> settled;
    // About to append to incidents.jsonl: the state_dir must be there (it may have been
    // deleted; the Daemon restores it), or the record is lost. False: it is another daemon's
    // now, and nothing is written there.
    std::function<bool()> before_record;
    // The processes writing the watched streams now (or remembered): whose job this is.
    std::function<std::vector<source::WriterProcess>()> job_processes;
    // Look for those processes again soon (a launcher's ranks, started after it).
    std::function<void()> rescan_job_processes;
    // The HTTP client the Alertmanager output posts with; none: no alerts are posted.
    std::function<std::unique_ptr<alert::HttpClient>()> make_http_client;
  };
  // What a manual snapshot adds to a capture.
  struct ManualOptions {
    std::string container;
    std::vector<std::string> extra_logs;
    std::vector<std::string> extra_paths;
  };
  using Done = std::function<void(const capture::CaptureOutcome& outcome)>;

  IncidentFlow(Env& env, const std::string& incidents_file, Hooks hooks);
  // What the log says of earlier runs; restores each rule's cooldown from it.
  ops::IncidentHistory LoadHistory();
  void Configure(const config::DaemonConfig& config);
  // At start, once configured: logs each incident of an earlier run whose capture never
  // finished (a stop or a kill during it) and records that it was reported, so it is told once.
  void ReportUncaptured();

  void OnFirings(std::vector<detect::Firing>& firings, detect::StreamDetector* stream);
  // The writer of `stream` went on after the crashes it reported up to `line` (caught
  // exceptions): within the open incident they are warnings now.
  void CrashCaught(const std::string& source, const std::string& stream, std::uint64_t line) {
    builder_.CrashCaught(source, stream, line);
  }
  // Written incidents not yet resolved: only then is ObserveStream worth calling.
  bool any_unresolved() const { return lifecycle_.any_open(); }
  // What a stream shows now (ops/incident_lifecycle.h); RecordResolved writes what it resolved.
  void ObserveStream(const ops::StreamActivity& activity, WallTime wall_now) {
    lifecycle_.Observe(activity, wall_now);
  }
  void RecordResolved();
  // The job and node: from `incident`'s writers' environments (when given), then the other
  // processes known to write the watched streams.
  detect::JobIdentity JobOf(const detect::Incident* incident) const;
  // `trainwatch incidents ack ID`: resolves an incident this daemon follows, and records it.
  // Fails for one it does not follow (resolved already, never open here, or forgotten past
  // IncidentLifecycle::kMaxOpen): the client checks the log and records it there itself.
  Result<ops::Resolution> Acknowledge(const std::string& id, const std::string& why);
  // `trainwatch snapshot`: a manual incident, recorded and captured now; `done` gets the bundle.
  void Manual(const std::string& reason, const ManualOptions& options, const Done& done);
  // No incident open, no capture running, no hook running or waiting.
  bool idle() const;
  // No incident open and no capture running (hooks may still run).
  bool captured() const { return !builder_.open() && captures_running_ == 0; }
  // No capture runs or waits (an incident may be open).
  bool capture_idle() const { return captures_running_ == 0; }
  // The incident ids whose capture runs or waits, oldest first.
  const std::vector<std::string>& capturing() const { return capturing_; }
  // The daemon stops: what runs is killed, what waits forgotten (and said so); a capture under
  // way or queued is recorded as interrupted.
  void Abort();
  // The incident parts of the daemon's snapshot.
  void FillSnapshot(ops::DaemonSnapshot& snapshot) const;
  std::uint64_t Activity() const;
  // The one redactor for log text leaving the daemon (built at its first use).
  std::shared_ptr<const collect::Redactor> redactor_for_text();
  const std::string& incidents_file() const { return log_.path(); }
  std::uint64_t written() const { return incidents_written_; }
  const std::string& last_incident() const { return last_incident_; }

 private:
  void ScheduleSettle();
  void WriteSettled();
  void Write(detect::Incident& incident, const ManualOptions& options, const Done& done);
  void Capture(const detect::Incident& incident, const ManualOptions& options, const Done& done);
  void OnCaptured(const capture::CaptureOutcome& outcome);
  void RunHooks(const detect::Incident& incident, const capture::CaptureOutcome& outcome);
  void Record(const ops::Resolution& resolution);

  // Puts the incident's record on the shared directory (cluster.shared_dir), and again with
  // its bundle once captured.
  void PublishToPeers(const detect::Incident& incident);
  void PublishBundle(const capture::CaptureOutcome& outcome);
  // Stamps the record and queues it; false (logged) when the outbox cannot take it.
  bool QueueRecord(cluster::PeerRecord& record);
  // The ids of the jobs whose processes write the watched streams (or the configured one):
  // whose directories the PeerWatcher lists. While a writer names no job, asks for the
  // writers again, backing off.
  std::vector<std::string> JobsHere();
  // Other nodes' new records: a peer incident for the first fresh one of a job failure.
  void OnPeerRecords(const std::vector<cluster::PeerWatcher::Found>& found);
  // Why no peer incident is opened for `record` now; empty: one is.
  std::string NoPeerCaptureBecause(const cluster::PeerRecord& record) const;

  Env& env_;
  Hooks wiring_;
  config::DaemonConfig config_;
  detect::IncidentBuilder builder_{{}};
  ops::IncidentLog log_;
  ops::RecurrenceBook recurrences_;
  ops::IncidentLifecycle lifecycle_;
  std::string host_ = capture::Hostname();
  std::unique_ptr<cluster::SharedPublisher> publisher_;
  std::map<std::string, cluster::PeerRecord> awaiting_bundle_;  // published, capture running
  std::unique_ptr<cluster::PeerWatcher> watcher_;
  std::unique_ptr<alert::AlertOutput> alerts_;
  cluster::JobBook jobs_;  // captures per job, and the records of each (the report's view)
  // Peers' incidents seen while this node's own incident settled: decided once it is written.
  std::vector<cluster::PeerWatcher::Found> deferred_peers_;
  // Looking for the ranks of a writer that names no job (its launcher): when next, how often.
  SteadyTime next_job_scan_{};
  Duration job_scan_every_{0};
  std::set<int> writers_without_job_;
  bool said_no_job_ = false;
  // The owners of this node's processes of each job (JobsHere): whose records are acted on.
  cluster::JobOwners job_uids_;
  std::unique_ptr<capture::Capturer> capturer_;
  ops::HookRunner hook_runner_;
  std::unique_ptr<LoopTimer> settle_;
  ops::DaemonCounters counters_;
  int captures_running_ = 0;
  std::vector<std::string> capturing_;  // the incidents whose capture runs or waits
  bool aborted_ = false;
  std::uint64_t incidents_written_ = 0;
  std::string last_incident_;
  ops::FiringLog firing_log_;
};

}  // namespace trainwatch::app
