#include "incident/shared_dir_link.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "capture/job_identity.h"

namespace trainwatch::incident {

SharedDirLink::SharedDirLink(Env& env, Pipeline& pipeline, JobProcesses& processes,
                             const std::string& outbox, std::function<bool()> may_write)
    : env_(env),
      pipeline_(pipeline),
      processes_(processes),
      may_write_(std::move(may_write)),
      host_(capture::Hostname()),
      publisher_(std::make_unique<cluster::SharedPublisher>(env, outbox)),
      watcher_(std::make_unique<cluster::PeerWatcher>(
          env, [this] { return JobsHere(); },
          [this](const std::vector<cluster::PeerWatcher::Found>& found) { OnPeerRecords(found); },
          [this](const std::string& job) { return !jobs_.CapturedAgo(job, env_.SteadyNow()); })) {}

SharedDirLink::~SharedDirLink() = default;

void SharedDirLink::Configure(const config::DaemonConfig& config) {
  config_ = config;
  const std::string node = capture::NodeName(config_.cluster, host_).first;
  publisher_->Configure(config_.cluster.shared_dir, node,
                        std::chrono::duration_cast<std::chrono::hours>(config_.cluster.retention));
  watcher_->Configure(config_.cluster.shared_dir, node, config_.cluster.poll_interval);
}

void SharedDirLink::Restore(const ops::IncidentHistory& history) {
  const WallTime wall_now = env_.WallNow();
  for (const auto& [job, opened] : history.job_last_captured) {
    jobs_.Captured(job, env_.SteadyNow() - (wall_now - opened));
  }
}

void SharedDirLink::Recorded(const detect::Incident& incident) {
  if (incident.peer) {
    ++peer_captures_;
  }
  const bool failure = incident.reason.empty() && incident.kind != rules::RuleKind::kWarning;
  if (!incident.job.id.empty() && (failure || incident.peer)) {  // its ranks are captured
    jobs_.Captured(incident.job.id, env_.SteadyNow());
  }
  // A capture for another node's slow incident is published too: where this node's ranks
  // waited is what tells which node is slow (`trainwatch job`). Other peer captures add
  // nothing the job's records need.
  const bool slow_peer = incident.peer && incident.peer->kind == "slow";
  if (config_.cluster.shared_dir.empty() || !(failure || slow_peer)) {
    return;  // off, or no failure of the job (a manual snapshot, warnings)
  }
  if (incident.job.id.empty()) {
    if (!said_no_job_) {
      said_no_job_ = true;
      spdlog::warn(
          "incident {} names no job (no TRAINWATCH_JOB_ID, TORCHELASTIC_RUN_ID, SLURM_JOB_ID or "
          "MASTER_ADDR in its processes, no cluster.job_id): not published to {}; said once",
          incident.id, config_.cluster.shared_dir);
    }
    return;
  }
  cluster::PeerRecord record = cluster::PeerRecordOf(incident);
  if (!QueueRecord(record)) {
    return;
  }
  if (config_.capture.enabled && awaiting_bundle_.size() < 64) {
    awaiting_bundle_.emplace(incident.id, std::move(record));
  }
}

std::string SharedDirLink::EarlierFailureElsewhere(const detect::Incident& incident,
                                                   WallTime since) const {
  if (config_.cluster.shared_dir.empty() || incident.job.id.empty()) {
    return {};
  }
  auto ms = [](WallTime time) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
  };
  const std::int64_t opened = ms(incident.opened);
  // Within the attempt: after the last one ended here, and close before this one (the ranks'
  // own errors of one attempt come within seconds of each other; an older one is another
  // attempt's).
  const std::int64_t from =
      std::max(ms(since), opened - std::chrono::milliseconds(kSameFailureWindow).count());
  for (const cluster::PeerRecord& record : jobs_.RecordsOf(incident.job.id)) {
    if (record.node == incident.job.node || !record.primary ||
        (record.kind != "crash" && record.kind != "device") || record.opened_ms >= opened ||
        record.opened_ms <= from || !cluster::UntrustedBecause(record, job_uids_).empty()) {
      continue;
    }
    return record.node;
  }
  return {};
}

void SharedDirLink::AddToCapture(capture::CaptureRequest& request) const {
  request.job_incidents = jobs_.RecordsOf(request.incident.job.id);
}

void SharedDirLink::Captured(const capture::CaptureOutcome& outcome) {
  const auto it = awaiting_bundle_.find(outcome.incident_id);
  if (it == awaiting_bundle_.end()) {
    return;
  }
  cluster::PeerRecord record = std::move(it->second);
  awaiting_bundle_.erase(it);
  if (!may_write_()) {
    return;  // the outbox is in the state_dir, another daemon's now
  }
  record.bundle = outcome.path;
  for (const diagnose::Suspect& suspect : outcome.suspects) {
    record.suspects.push_back({suspect.rank, suspect.label, suspect.reason});
  }
  record.waiting = outcome.waiting;
  QueueRecord(record);
}

void SharedDirLink::Resolved(const ops::Resolution& resolution) {
  if (!resolution.job_id.empty()) {
    jobs_.Resolved(resolution.job_id);  // a peer's failure of the job after it is a new one
  }
}

void SharedDirLink::Stopping() {
  publisher_->Stop();
  watcher_->Stop();
}

bool SharedDirLink::QueueRecord(cluster::PeerRecord& record) {
  jobs_.Remember(record);
  record.published_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(env_.WallNow().time_since_epoch())
          .count();
  if (Status queued = publisher_->Publish(cluster::JobDirName(record.job_id),
                                          cluster::PeerFileName(record.incident_id, record.node),
                                          cluster::PeerRecordJson(record));
      !queued) {
    spdlog::error("incident {}: cannot queue its record for the shared directory: {}",
                  record.incident_id, queued.error().message);
    return false;
  }
  return true;
}

std::vector<std::string> SharedDirLink::JobsHere() {
  if (!config_.cluster.job_id.empty()) {
    // Every process here is the job's: their owners are whose records are acted on.
    job_uids_.clear();
    job_uids_[config_.cluster.job_id];  // runs here, by the operator's word
    for (const source::WriterProcess& writer : processes_.Known()) {
      if (writer.uid) {
        job_uids_[config_.cluster.job_id].insert(*writer.uid);
      }
    }
    return {config_.cluster.job_id};
  }
  std::vector<std::string> jobs;
  // Each process on its own: a node may run two jobs.
  std::set<int> without_job;
  job_uids_.clear();
  for (const source::WriterProcess& writer : processes_.Known()) {
    detect::JobIdentity job =
        capture::IdentifyJob({capture::JobEnvironOf(writer)}, config_.cluster, host_, {writer.uid});
    if (job.id.empty()) {
      without_job.insert(writer.pid);
      continue;
    }
    if (job.uid) {
      job_uids_[job.id].insert(*job.uid);  // bounded by the processes, as `jobs` is
    }
    if (std::find(jobs.begin(), jobs.end(), job.id) == jobs.end()) {
      jobs.push_back(std::move(job.id));
    }
  }
  // A launcher (torchrun's agent, a spawning script) writes the log before its ranks start,
  // and the job's id is often in the ranks' environment alone; the daemon looks for writers
  // again only when it reads lines of unknown ones. Look again after 1, 2, 4 ... 60 s, from
  // the start again when those writers change.
  if (without_job != writers_without_job_) {
    writers_without_job_ = std::move(without_job);
    job_scan_every_ = config_.cluster.poll_interval;
    next_job_scan_ = env_.SteadyNow() + job_scan_every_;
  } else if (!writers_without_job_.empty() && env_.SteadyNow() >= next_job_scan_) {
    processes_.Rescan();
    job_scan_every_ = std::min<Duration>(job_scan_every_ * 2, std::chrono::seconds(60));
    next_job_scan_ = env_.SteadyNow() + job_scan_every_;
  }
  return jobs;
}

std::string SharedDirLink::NoPeerCaptureBecause(const cluster::PeerRecord& record) const {
  if (!config_.cluster.peer_capture) {
    return "cluster.peer_capture is off";
  }
  if (std::string untrusted = cluster::UntrustedBecause(record, job_uids_); !untrusted.empty()) {
    return untrusted;
  }
  if (const std::optional<Duration> ago = jobs_.CapturedAgo(record.job_id, env_.SteadyNow())) {
    // One capture per job failure: the first node's, or the peer capture for it already made.
    return fmt::format("this node captured for job {} {} s ago (within the cooldown)",
                       record.job_id,
                       std::chrono::duration_cast<std::chrono::seconds>(*ago).count());
  }
  return {};
}

void SharedDirLink::SettleEnded() {
  if (deferred_peers_.empty()) {
    return;
  }
  std::vector<cluster::PeerWatcher::Found> deferred;
  deferred.swap(deferred_peers_);
  OnPeerRecords(deferred);
}

void SharedDirLink::OnPeerRecords(const std::vector<cluster::PeerWatcher::Found>& found) {
  for (const cluster::PeerWatcher::Found& each : found) {
    const cluster::PeerRecord& record = each.record;
    jobs_.Remember(record);
    if (record.kind == "peer") {
      continue;  // another node's capture for a failure, not one of its own
    }
    if (!each.fresh) {
      spdlog::info(
          "node {} of job {}: incident {} opened more than {} min ago (on its clock): old, no "
          "capture",
          record.node, record.job_id, record.incident_id, cluster::PeerWatcher::kFreshFor.count());
      continue;
    }
    const detect::Incident* settling = pipeline_.Settling();
    if (settling != nullptr && settling->kind != rules::RuleKind::kWarning &&
        config_.cluster.peer_capture) {
      // This node's own incident settles now, likely the same failure: decided once it is
      // written (its job known), so that a capture is neither made twice nor missed.
      spdlog::info(
          "node {} of job {} opened incident {}: decided once this node's incident {} "
          "settles",
          record.node, record.job_id, record.incident_id, settling->id);
      if (deferred_peers_.size() < cluster::PeerWatcher::kMaxJobs) {
        deferred_peers_.push_back(each);
      }
      continue;
    }
    const std::string because = NoPeerCaptureBecause(record);
    spdlog::warn(
        "node {} of job {} opened incident {} ({}: {}; cause {}){}", record.node, record.job_id,
        record.incident_id, record.kind, record.summary, record.cause,
        because.empty() ? ": capturing this node's ranks now" : "; no capture: " + because);
    if (!because.empty()) {
      continue;
    }
    pipeline_.OpenPeerIncident({record.job_id, record.node, record.incident_id, record.kind,
                                record.summary, record.cause, record.action, record.first_rank,
                                record.opened_ms, record.uid});
  }
}

void SharedDirLink::FillSnapshot(ops::DaemonSnapshot& snapshot) const {
  if (config_.cluster.shared_dir.empty()) {
    return;
  }
  const cluster::PublisherState& state = publisher_->state();
  const cluster::WatcherState& watch = watcher_->state();
  snapshot.shared = ops::DaemonSnapshot::Shared{config_.cluster.shared_dir,
                                                state.published,
                                                state.pending,
                                                state.error,
                                                watch.jobs,
                                                watch.listings,
                                                watch.records,
                                                peer_captures_,
                                                watch.error};
}

std::uint64_t SharedDirLink::Activity() const {
  std::uint64_t sum = publisher_->state().published;
  sum = sum * 31 + publisher_->state().pending;
  return sum * 31 + watcher_->state().records;
}

}  // namespace trainwatch::incident
