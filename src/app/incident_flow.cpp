#include "app/incident_flow.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "capture/incident_filter.h"
#include "capture/incident_redaction.h"
#include "capture/job_identity.h"
#include "capture/speakers.h"
#include "core/quantity.h"
#include "detect/incident_json.h"
#include "ops/uncaptured_incidents.h"

namespace trainwatch::app {
namespace {

std::vector<std::string> NamesOf(const std::vector<config::CommandConfig>& commands) {
  std::vector<std::string> names;
  names.reserve(commands.size());
  for (const config::CommandConfig& command : commands) {
    names.push_back(command.name);
  }
  return names;
}

}  // namespace

IncidentFlow::IncidentFlow(Env& env, const std::string& incidents_file, Hooks hooks)
    : env_(env),
      wiring_(std::move(hooks)),
      log_(incidents_file),
      hook_runner_(env),
      settle_(env.NewTimer([this] { WriteSettled(); })) {
  // Beside incidents.jsonl: the state_dir's.
  publisher_ = std::make_unique<cluster::SharedPublisher>(
      env, (std::filesystem::path(incidents_file).parent_path() / "outbox").string());
  alerts_ = std::make_unique<alert::AlertOutput>(
      env, (std::filesystem::path(incidents_file).parent_path() / "alerts.json").string(),
      wiring_.make_http_client, [this](const std::string& id) { return lifecycle_.IsOpen(id); });
  watcher_ = std::make_unique<cluster::PeerWatcher>(
      env, [this] { return JobsHere(); },
      [this](const std::vector<cluster::PeerWatcher::Found>& found) { OnPeerRecords(found); },
      [this](const std::string& job) { return !jobs_.CapturedAgo(job, env_.SteadyNow()); });
  hook_runner_.OnIdle([this] { wiring_.settled(); });
}

ops::IncidentHistory IncidentFlow::LoadHistory() {
  Result<ops::IncidentHistory> history = log_.ReadHistory();
  if (!history) {
    spdlog::error("{}; earlier incidents are not taken into account", history.error().message);
    return {};
  }
  recurrences_.Restore(history->fingerprints);
  const WallTime wall_now = env_.WallNow();
  for (const auto& [rule, opened] : history->rule_last_opened) {
    builder_.RestoreCooldown(rule, env_.SteadyNow() - (wall_now - opened));
  }
  for (const auto& [job, opened] : history->job_last_captured) {
    jobs_.Captured(job, env_.SteadyNow() - (wall_now - opened));
  }
  for (ops::OpenIncident& open : history->open) {
    open.opened = env_.SteadyNow();  // what happened while the daemon was away is not known
    lifecycle_.Restore(std::move(open));
  }
  if (history->incidents > 0) {
    spdlog::info(
        "{} earlier incidents in {} ({} still open); their cooldowns and fired lines carry on",
        history->incidents, log_.path(), lifecycle_.open_count());
  }
  return std::move(*history);
}

void IncidentFlow::ReportUncaptured() {
  if (!config_.capture.enabled) {
    return;  // no bundle was wanted
  }
  for (const ops::UncapturedIncident& incident :
       ops::FindUncapturedIncidents(log_.path(), ops::IncidentLog::kTailBytes)) {
    spdlog::error(
        "incident {} (opened {}: {}) has no bundle: the daemon stopped during its "
        "capture; what its logs said is in {}, and `trainwatch snapshot` captures the "
        "state now",
        incident.id, incident.opened, incident.summary, log_.path());
    capture::CaptureOutcome outcome;
    outcome.incident_id = incident.id;
    outcome.error = std::string(ops::kReportedAtStart);
    if (Status recorded = log_.AppendBundle(outcome); !recorded) {
      spdlog::error("cannot record the bundle of incident {}: {}", incident.id,
                    recorded.error().message);
    }
  }
}

void IncidentFlow::Configure(const config::DaemonConfig& config) {
  if (capturer_ && config.capture.bundles_dir != config_.capture.bundles_dir) {
    spdlog::info("bundles now go to {}", config.capture.bundles_dir);
  }
  config_ = config;
  if (capturer_) {
    capturer_->Reconfigure(config_.capture);
  } else {
    capturer_ = std::make_unique<capture::Capturer>(env_, config_.capture);
  }
  hook_runner_.Configure(config_.on_incident);
  builder_.set_settings({config_.incident.settle, config_.incident.cooldown});
  const std::string node = capture::NodeName(config_.cluster, host_).first;
  publisher_->Configure(config_.cluster.shared_dir, node,
                        std::chrono::duration_cast<std::chrono::hours>(config_.cluster.retention));
  watcher_->Configure(config_.cluster.shared_dir, node, config_.cluster.poll_interval);
  alerts_->Configure(config_.alertmanager);
}

void IncidentFlow::OnFirings(std::vector<detect::Firing>& firings, detect::StreamDetector* stream) {
  const SteadyTime now = env_.SteadyNow();
  // Redacted here, once, before the firing is logged or joins an incident: every way out
  // downstream (incidents.jsonl, the manifest, this log, hooks, status) then quotes clean text.
  // What was redacted is not counted here; a bundle's manifest counts what its files held.
  const std::shared_ptr<const collect::Redactor> redactor = redactor_for_text();
  collect::RedactionCounts redacted;
  for (detect::Firing& firing : firings) {
    capture::RedactFiring(*redactor, firing, redacted);
    ++counters_.firings_by_rule[firing.event.rule_id];
    const ops::FiringLog::Said said = ops::FiringLog::Describe(firing);
    if (stream != nullptr) {
      // Held before Add moves the firing; released when the incident is written (or at
      // once, below, when it joined nothing).
      stream->HoldForIncident(firing);
    }
    const detect::IncidentBuilder::Disposition disposition = builder_.Add(std::move(firing), now);
    firing_log_.Record(said, disposition, builder_.open() ? &*builder_.open() : nullptr);
  }
  if (!builder_.open() && stream != nullptr) {
    stream->ReleaseIncidentHold();
  }
  ScheduleSettle();
}

void IncidentFlow::ScheduleSettle() {
  const std::optional<SteadyTime> at = builder_.SettlesAt();
  if (!at) {
    return;
  }
  settle_->Start(std::chrono::ceil<std::chrono::milliseconds>(std::max<SteadyTime::duration>(
                     SteadyTime::duration::zero(), *at - env_.SteadyNow())),
                 {});
}

void IncidentFlow::WriteSettled() {
  if (std::optional<detect::Incident> incident =
          builder_.TakeSettled(env_.SteadyNow(), env_.WallNow())) {
    Write(*incident, {}, nullptr);
  } else {
    ScheduleSettle();
  }
  if (!builder_.open() && !deferred_peers_.empty()) {
    std::vector<cluster::PeerWatcher::Found> deferred;
    deferred.swap(deferred_peers_);
    OnPeerRecords(deferred);
  }
  wiring_.settled();
}

std::shared_ptr<const collect::Redactor> IncidentFlow::redactor_for_text() {
  if (!capturer_) {  // not configured yet: the built-in patterns
    capturer_ = std::make_unique<capture::Capturer>(env_, config_.capture);
  }
  return capturer_->redactor();
}

void IncidentFlow::Manual(const std::string& reason, const ManualOptions& options,
                          const Done& done) {
  // A client's reason is quoted in the summary, the log and the hooks' environment too.
  std::string clean_reason = reason;
  collect::RedactionCounts redacted;
  redactor_for_text()->RedactText(clean_reason, redacted);
  detect::Incident incident = builder_.Manual(clean_reason, env_.WallNow());
  Write(incident, options, done);
}

bool IncidentFlow::idle() const {
  return !builder_.open() && captures_running_ == 0 && hook_runner_.idle();
}

void IncidentFlow::Write(detect::Incident& incident, const ManualOptions& options,
                         const Done& done) {
  if (wiring_.before_record && !wiring_.before_record()) {
    // The daemon is stopping: the other daemon records what it sees.
    spdlog::error("incident {}: not recorded, the state_dir is another daemon's now", incident.id);
    return;
  }
  recurrences_.Stamp(incident);
  incident.job = JobOf(&incident);
  if (incident.peer && incident.job.id != incident.peer->job_id) {
    // Two jobs here: the peer's is the one this capture is for.
    incident.job.id = incident.peer->job_id;
    incident.job.id_from = "peer";
  }
  if (incident.peer && incident.peer->uid && *incident.peer->uid >= 0) {
    incident.job.uid = static_cast<uid_t>(*incident.peer->uid);  // whose ranks it may capture
  }
  if (!incident.job.id.empty() && incident.reason.empty() &&
      (incident.kind != rules::RuleKind::kWarning || incident.peer)) {
    jobs_.Captured(incident.job.id, env_.SteadyNow());
  }
  if (Status written = log_.Append(incident); !written) {
    // The incident still counts; the next one may find space again.
    spdlog::error("incident {} could not be recorded: {}", incident.id, written.error().message);
  } else {
    spdlog::warn(
        "incident {}: {} — {} ({} firing lines, rules: {}); cause {}, action {}: {}; fingerprint "
        "{}{}; job {} on {}",
        incident.id, detect::IncidentKindName(incident), incident.summary,
        incident.firings.size() + incident.more_firings,
        fmt::format("{}", fmt::join(incident.rules, ", ")),
        rules::CauseName(incident.verdict.verdict.cause),
        rules::ActionName(incident.verdict.verdict.action), incident.verdict.why,
        incident.fingerprint, ops::RecurrenceText(incident.recurrence),
        incident.job.id.empty() ? "unknown" : incident.job.id, incident.job.node);
  }
  // Open from the moment it opened: an advance during its settle time resolves it at once.
  const auto ago = std::max(WallTime::duration::zero(), env_.WallNow() - incident.opened);
  lifecycle_.Open(incident, env_.SteadyNow() - std::chrono::duration_cast<Duration>(ago));
  if (lifecycle_.IsOpen(incident.id)) {  // not a manual snapshot, a peer capture, warnings
    alerts_->Open(alert::AlertOf(incident, config_.alertmanager));
  }
  PublishToPeers(incident);
  ++incidents_written_;
  ++counters_.incidents_by_kind[detect::IncidentKindName(incident)];
  ++counters_
        .incidents_by_verdict[{std::string(rules::CauseName(incident.verdict.verdict.cause)),
                               std::string(rules::ActionName(incident.verdict.verdict.action))}];
  last_incident_ = incident.id;
  wiring_.written();
  Capture(incident, options, done);
}

detect::JobIdentity IncidentFlow::JobOf(const detect::Incident* incident) const {
  // The incident's own writers first: on a node running two jobs, it is theirs.
  std::vector<std::string_view> environs;
  std::vector<std::optional<uid_t>> uids;
  // Who raised it: a user's log speaks for that user's job alone (its id is looked up in their
  // processes only, and its record carries their uid, so that no peer acts on another user's
  // job for it). The kernel's lines and root's logs speak for any job here.
  const std::set<uid_t> speakers = incident != nullptr && !incident->peer
                                       ? capture::IncidentSpeakers(*incident)
                                       : std::set<uid_t>{};
  auto may_speak = [&](const source::WriterProcess& writer) {
    return speakers.empty() || (writer.uid && speakers.contains(*writer.uid));
  };
  if (incident != nullptr) {
    for (const detect::Firing& firing : incident->firings) {
      for (const source::WriterProcess& writer : firing.writers) {
        if (may_speak(writer)) {
          environs.push_back(writer.environ);
          uids.push_back(writer.uid);
        }
      }
    }
  }
  const std::vector<source::WriterProcess> others =
      wiring_.job_processes ? wiring_.job_processes() : std::vector<source::WriterProcess>{};
  for (const source::WriterProcess& writer : others) {
    if (may_speak(writer)) {
      environs.push_back(writer.environ);
      uids.push_back(writer.uid);
    }
  }
  detect::JobIdentity job = capture::IdentifyJob(environs, config_.cluster, host_, uids);
  if (!speakers.empty()) {
    // One user (the usual case) or several, or one not known: a uid no peer's job runs as
    // where it is not exactly one known user.
    job.uid = speakers.size() == 1 ? *speakers.begin() : capture::kUnknownSpeaker;
  } else if (!job.uid) {
    job.uid = 0;  // the kernel or root spoke, and no process of the job is known: root's word
  }
  return job;
}

void IncidentFlow::PublishToPeers(const detect::Incident& incident) {
  if (config_.cluster.shared_dir.empty() || !incident.reason.empty() ||
      incident.kind == rules::RuleKind::kWarning) {
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

void IncidentFlow::PublishBundle(const capture::CaptureOutcome& outcome) {
  const auto it = awaiting_bundle_.find(outcome.incident_id);
  if (it == awaiting_bundle_.end()) {
    return;
  }
  cluster::PeerRecord record = std::move(it->second);
  awaiting_bundle_.erase(it);
  record.bundle = outcome.path;
  for (const diagnose::Suspect& suspect : outcome.suspects) {
    record.suspects.push_back({suspect.rank, suspect.label, suspect.reason});
  }
  QueueRecord(record);
}

bool IncidentFlow::QueueRecord(cluster::PeerRecord& record) {
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

std::vector<std::string> IncidentFlow::JobsHere() {
  if (!config_.cluster.job_id.empty()) {
    // Every process here is the job's: their owners are whose records are acted on.
    job_uids_.clear();
    const std::vector<source::WriterProcess> processes =
        wiring_.job_processes ? wiring_.job_processes() : std::vector<source::WriterProcess>{};
    for (const source::WriterProcess& writer : processes) {
      if (writer.uid) {
        job_uids_[config_.cluster.job_id].insert(*writer.uid);
      }
    }
    return {config_.cluster.job_id};
  }
  std::vector<std::string> jobs;
  if (!wiring_.job_processes) {
    return jobs;
  }
  // Each process on its own: a node may run two jobs.
  std::set<int> without_job;
  job_uids_.clear();
  for (const source::WriterProcess& writer : wiring_.job_processes()) {
    detect::JobIdentity job =
        capture::IdentifyJob({writer.environ}, config_.cluster, host_, {writer.uid});
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
  } else if (!writers_without_job_.empty() && wiring_.rescan_job_processes &&
             env_.SteadyNow() >= next_job_scan_) {
    wiring_.rescan_job_processes();
    job_scan_every_ = std::min<Duration>(job_scan_every_ * 2, std::chrono::seconds(60));
    next_job_scan_ = env_.SteadyNow() + job_scan_every_;
  }
  return jobs;
}

std::string IncidentFlow::NoPeerCaptureBecause(const cluster::PeerRecord& record) const {
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

void IncidentFlow::OnPeerRecords(const std::vector<cluster::PeerWatcher::Found>& found) {
  for (const cluster::PeerWatcher::Found& each : found) {
    const cluster::PeerRecord& record = each.record;
    jobs_.Remember(record);
    if (!each.fresh) {
      spdlog::info(
          "node {} of job {}: incident {} opened more than {} min ago (on its clock): old, no "
          "capture",
          record.node, record.job_id, record.incident_id, cluster::PeerWatcher::kFreshFor.count());
      continue;
    }
    if (builder_.open() && builder_.open()->kind != rules::RuleKind::kWarning &&
        config_.cluster.peer_capture) {
      // This node's own incident settles now, likely the same failure: decided once it is
      // written (its job known), so that a capture is neither made twice nor missed.
      spdlog::info(
          "node {} of job {} opened incident {}: decided once this node's incident {} "
          "settles",
          record.node, record.job_id, record.incident_id, builder_.open()->id);
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
    detect::PeerLink link{record.job_id,    record.node,  record.incident_id, record.kind,
                          record.summary,   record.cause, record.action,      record.first_rank,
                          record.opened_ms, record.uid};
    detect::Incident incident = builder_.Peer(std::move(link), env_.WallNow());
    Write(incident, {}, nullptr);
  }
}

void IncidentFlow::RecordResolved() {
  for (const ops::Resolution& resolution : lifecycle_.TakeResolved()) {
    Record(resolution);
  }
}

Result<ops::Resolution> IncidentFlow::Acknowledge(const std::string& id, const std::string& why) {
  if (!lifecycle_.IsOpen(id)) {
    return Error{"incident " + id + " is not open in this daemon"};
  }
  std::string clean_why = why;  // quoted in the log and the record
  collect::RedactionCounts redacted;
  redactor_for_text()->RedactText(clean_why, redacted);
  ops::Resolution resolution = lifecycle_.Ack(id, clean_why, env_.WallNow());
  Record(resolution);
  return resolution;
}

void IncidentFlow::Record(const ops::Resolution& resolution) {
  // The same stall after a recovery is a new failure, not a repeat within the cooldown; and a
  // peer's failure of the job after it is a new one to capture for.
  builder_.EndCooldown(resolution.rules);
  if (!resolution.job_id.empty()) {
    jobs_.Resolved(resolution.job_id);
  }
  ++counters_.resolved_by_how[std::string(ops::ResolvedByName(resolution.by))];
  const auto open_for = std::chrono::duration_cast<std::chrono::seconds>(
      std::max(WallTime::duration::zero(), resolution.at - resolution.opened));
  spdlog::info("incident {} resolved ({} s after it opened): {}", resolution.id, open_for.count(),
               resolution.why);
  if (wiring_.before_record && !wiring_.before_record()) {
    return;  // the state_dir is another daemon's now
  }
  alerts_->Resolve(resolution.id, resolution.at);
  if (Status recorded = log_.AppendResolved(resolution); !recorded) {
    spdlog::error("cannot record that incident {} resolved: {}", resolution.id,
                  recorded.error().message);
  }
}

void IncidentFlow::Capture(const detect::Incident& incident, const ManualOptions& options,
                           const Done& done) {
  if (!config_.capture.enabled ||
      (incident.kind == rules::RuleKind::kWarning && incident.reason.empty() && !incident.peer)) {
    const capture::CaptureOutcome outcome{
        incident.id, "", 0, false,
        config_.capture.enabled ? "no bundle for a warning" : "capture is disabled in the config"};
    RunHooks(incident, outcome);
    if (done) {
      done(outcome);
    }
    return;
  }
  capture::CaptureRequest request;
  request.incident = incident;
  request.job_incidents = jobs_.RecordsOf(incident.job.id);
  request.reason = incident.reason;
  request.container = options.container;
  request.extra_logs = options.extra_logs;
  request.extra_paths = options.extra_paths;
  wiring_.fill_capture(request);
  ++captures_running_;
  capturing_.push_back(incident.id);
  detect::Incident facts = incident;  // for the hooks: what they are told, not every line
  facts.firings.clear();
  capturer_->Capture(std::move(request),
                     [this, done, facts](const capture::CaptureOutcome& outcome) {
                       --captures_running_;
                       std::erase(capturing_, outcome.incident_id);
                       OnCaptured(outcome);
                       RunHooks(facts, outcome);
                       if (done) {
                         done(outcome);
                       }
                       wiring_.settled();
                     });
}

void IncidentFlow::RunHooks(const detect::Incident& incident,
                            const capture::CaptureOutcome& outcome) {
  if (!aborted_) {
    hook_runner_.Run(incident, outcome.path, outcome.error, log_.path());
  }
}

void IncidentFlow::OnCaptured(const capture::CaptureOutcome& outcome) {
  counters_.CountCapture(outcome, NamesOf(config_.capture.commands));
  if (!outcome.path.empty()) {
    spdlog::warn("incident {}: bundle {} ({}{}, {:.1f} s after the first firing line)",
                 outcome.incident_id, outcome.path, FormatByteSize(outcome.bytes),
                 outcome.reduced ? ", reduced: " + outcome.error : "", outcome.since_first_firing);
  } else {
    spdlog::error("incident {}: no bundle: {}", outcome.incident_id, outcome.error);
  }
  if (!outcome.ranks_summary.empty()) {
    spdlog::warn("incident {}: {}", outcome.incident_id, outcome.ranks_summary);
  }
  if (!outcome.devices_note.empty()) {
    spdlog::warn("incident {}: {}", outcome.incident_id, outcome.devices_note);
  }
  for (const diagnose::Suspect& suspect : outcome.suspects) {
    spdlog::warn("incident {}: suspect {} (pid {}): {}", outcome.incident_id, suspect.label,
                 suspect.pid, suspect.reason);
  }
  for (const std::string& deleted : outcome.deleted) {
    spdlog::info("retention: removed {}", deleted);
  }
  if (!outcome.timed_out.empty()) {
    spdlog::warn("incident {}: collectors killed at their deadline: {}", outcome.incident_id,
                 fmt::format("{}", fmt::join(outcome.timed_out, ", ")));
  }
  if (wiring_.before_record && !wiring_.before_record()) {
    return;  // the state_dir is another daemon's now
  }
  if (Status recorded = log_.AppendBundle(outcome); !recorded) {
    spdlog::error("cannot record the bundle of incident {}: {}", outcome.incident_id,
                  recorded.error().message);
  }
  PublishBundle(outcome);
  if (!outcome.path.empty()) {
    std::vector<std::string> suspects;
    for (const diagnose::Suspect& suspect : outcome.suspects) {
      suspects.push_back(suspect.label + ": " + suspect.reason);
    }
    alerts_->Annotate(outcome.incident_id,
                      {{"bundle", outcome.host + ":" + outcome.path},
                       {"report", "trainwatch report " + outcome.path},
                       {"suspects", fmt::format("{}", fmt::join(suspects, "; "))}});
  }
}

void IncidentFlow::Abort() {
  aborted_ = true;
  std::optional<capture::CaptureOutcome> early;
  if (capturer_) {
    early = capturer_->Abort();  // kept: a worker may still be finishing with it
  }
  // Captures under way or queued are abandoned: each incident gets its bundle record, saying
  // so, and a log line; the next start reports them again (ops/uncaptured_incidents.h),
  // except one whose early bundle was written: that is its bundle.
  for (const std::string& id : capturing_) {
    if (early && early->incident_id == id) {
      capture::CaptureOutcome outcome = *early;
      outcome.error = std::string(ops::kInterruptedCapture) +
                      "; its early bundle, without what was still being taken, stays";
      spdlog::error("incident {}: {}: {}", id, outcome.path, outcome.error);
      if (Status recorded = log_.AppendBundle(outcome); !recorded) {
        spdlog::error("cannot record the bundle of incident {}: {}", id, recorded.error().message);
      }
      continue;
    }
    capture::CaptureOutcome outcome;
    outcome.incident_id = id;
    outcome.error = std::string(ops::kInterruptedCapture);
    spdlog::error("incident {}: no bundle: {}", id, outcome.error);
    if (Status recorded = log_.AppendBundle(outcome); !recorded) {
      spdlog::error("cannot record the bundle of incident {}: {}", id, recorded.error().message);
    }
  }
  capturing_.clear();
  hook_runner_.Abort();  // logs and counts what it kills or leaves unrun
  settle_.reset();
  publisher_->Stop();
  watcher_->Stop();
  alerts_->Stop();
}

void IncidentFlow::FillSnapshot(ops::DaemonSnapshot& snapshot) const {
  snapshot.incidents_written = incidents_written_;
  snapshot.incidents_file = log_.path();
  snapshot.last_incident = last_incident_;
  snapshot.firings_without_incident = firing_log_.quiet_firings();
  if (const auto& open = builder_.open()) {
    snapshot.settling_incident = ops::SettlingIncidentSnapshot{
        open->id, detect::IncidentKindName(*open), open->summary, open->rules};
  }
  for (const ops::OpenIncident& open : lifecycle_.open()) {
    snapshot.open_incidents.push_back(
        {open.id, std::string(rules::RuleKindName(open.kind)), open.opened_wall});
  }
  if (!config_.cluster.shared_dir.empty()) {
    const cluster::PublisherState& state = publisher_->state();
    const cluster::WatcherState& watch = watcher_->state();
    // Peer captures are the incidents of kind "peer": counted there, not twice.
    const auto peers = counters_.incidents_by_kind.find("peer");
    snapshot.shared =
        ops::DaemonSnapshot::Shared{config_.cluster.shared_dir,
                                    state.published,
                                    state.pending,
                                    state.error,
                                    watch.jobs,
                                    watch.listings,
                                    watch.records,
                                    peers == counters_.incidents_by_kind.end() ? 0 : peers->second,
                                    watch.error};
  }
  if (alerts_->enabled()) {
    const alert::AlertOutputState& state = alerts_->state();
    snapshot.alertmanager = ops::DaemonSnapshot::Alertmanager{
        config_.alertmanager.urls, state.open,    state.ends_unsent, state.posts_ok,
        state.posts_failed,        state.dropped, state.error};
  }
  snapshot.counters = counters_;
  snapshot.collectors = NamesOf(config_.capture.commands);
  snapshot.hooks = NamesOf(config_.on_incident);
  snapshot.hook_counts = hook_runner_.counts();
}

std::uint64_t IncidentFlow::Activity() const {
  // incidents_by_kind moves with every incident written.
  std::uint64_t sum = counters_.Activity();
  sum = sum * 31 + publisher_->state().published;
  sum = sum * 31 + publisher_->state().pending;
  sum = sum * 31 + watcher_->state().records;
  sum = sum * 31 + alerts_->state().posts_ok + alerts_->state().posts_failed * 7 +
        alerts_->state().open * 13 + alerts_->state().ends_unsent * 17;
  for (const auto* counts : {&hook_runner_.counts().runs, &hook_runner_.counts().failures}) {
    for (const auto& [name, count] : *counts) {
      sum = sum * 31 + count;
    }
  }
  return sum * 31 + hook_runner_.counts().dropped;
}

}  // namespace trainwatch::app
