#include "incident/incident_flow.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "capture/incident_redaction.h"
#include "capture/job_identity.h"
#include "detect/incident_json.h"
#include "incident/firing_rank.h"
#include "ops/firing_log.h"
#include "ops/uncaptured_incidents.h"

namespace trainwatch::incident {
namespace {

// How often a settled incident that waits for a traceback looks again (the traceback's own
// quiet time is 300 ms).
constexpr std::chrono::milliseconds kTracebackPoll{100};

}  // namespace

IncidentFlow::IncidentFlow(Env& env, std::string incidents_file, JobProcesses& processes,
                           Owner owner)
    : env_(env),
      incidents_file_(std::move(incidents_file)),
      processes_(processes),
      owner_(std::move(owner)),
      host_(capture::Hostname()),
      settle_(env.NewTimer([this] { WriteSettled(); })) {}

IncidentFlow::~IncidentFlow() = default;

void IncidentFlow::AddSink(std::unique_ptr<IncidentSink> sink) {
  sinks_.push_back(std::move(sink));
}

ops::IncidentHistory IncidentFlow::LoadHistory() {
  const ops::IncidentLog log(incidents_file_, env_.fs());
  Result<ops::IncidentHistory> history = log.ReadHistory();
  if (!history) {
    spdlog::error("{}; earlier incidents are not taken into account", history.error().message);
    return {};
  }
  recurrences_.Restore(history->fingerprints);
  attempts_.Restore(history->attempts);
  const WallTime wall_now = env_.WallNow();
  for (const auto& [rule, opened] : history->rule_last_opened) {
    builder_.RestoreCooldown(rule, env_.SteadyNow() - (wall_now - opened));
  }
  for (ops::OpenIncident& open : history->open) {
    open.opened = env_.SteadyNow();  // what happened while the daemon was away is not known
    lifecycle_.Restore(std::move(open));
  }
  for (const std::unique_ptr<IncidentSink>& sink : sinks_) {
    sink->Restore(*history);
  }
  if (history->incidents > 0) {
    spdlog::info(
        "{} earlier incidents in {} ({} still open); their cooldowns and fired lines carry on",
        history->incidents, incidents_file_, lifecycle_.open_count());
  }
  return std::move(*history);
}

void IncidentFlow::Configure(const config::DaemonConfig& config) {
  if (capturer_ && config.capture.bundles_dir != config_.capture.bundles_dir) {
    spdlog::info("bundles now go to {}", config.capture.bundles_dir);
  }
  config_ = config;
  if (capturer_) {
    capturer_->Reconfigure(config_.capture);
  } else {
    capturer_ = MakeCapturer();
  }
  builder_.set_settings({config_.incident.settle, config_.incident.cooldown});
  for (const std::unique_ptr<IncidentSink>& sink : sinks_) {
    sink->Configure(config_);
  }
}

void IncidentFlow::SetStackRules(std::shared_ptr<const diagnose::StackRules> rules) {
  stack_rules_ = std::move(rules);
  if (capturer_) {
    capturer_->set_stack_rules(stack_rules_);
  }
}

void IncidentFlow::Start() {
  for (const std::unique_ptr<IncidentSink>& sink : sinks_) {
    sink->Started();
  }
}

void IncidentFlow::OnFirings(std::vector<detect::Firing>& firings, detect::StreamDetector* stream) {
  const SteadyTime now = env_.SteadyNow();
  // Redacted here, once, before the firing is logged or joins an incident: every way out
  // downstream (incidents.jsonl, the manifest, this log, hooks, status) then quotes clean text.
  // What was redacted is not counted here; a bundle's manifest counts what its files held.
  const std::shared_ptr<const collect::Redactor> redactor = redactor_for_text();
  collect::RedactionCounts redacted;
  bool resolved = false;
  for (detect::Firing& firing : firings) {
    capture::RedactFiring(*redactor, firing, redacted);
    // (Redacted first: its text is quoted in the resolution's record.)
    if (resolving_.Resolve(firing, lifecycle_, env_.WallNow())) {
      resolved = true;  // a line that ends a failure opens none
      if (builder_.open()) {
        // The failure it ends may be the incident settling now: looked at again once written.
        if (resolving_while_settling_.size() < kMaxResolvingWhileSettling) {
          resolving_while_settling_.push_back(firing);
        } else {
          spdlog::warn(
              "{}: more than {} resolving lines during one settle time; this one is "
              "not applied to the incident settling",
              firing.event.rule_id, kMaxResolvingWhileSettling);
        }
      }
      continue;
    }
    // A failure back after its end was told, within the same settle time ("fs01 not
    // responding", "fs01 OK", "fs01 not responding"): that end no longer holds.
    std::erase_if(resolving_while_settling_,
                  [&](const detect::Firing& ok) { return resolving_.CameBack(ok, firing); });
    firing.rank = RankOfFiring(firing, [this] { return processes_.Known(); });
    // While an incident settles, what comes joins it: a new crash's consequences belong to it,
    // not to an older incident of the same job still open.
    std::optional<FollowUps::Joined> joined;
    if (!builder_.open()) {
      joined = follow_ups_.Of(
          firing, now, [this](const detect::Firing& later) { return JobIdOf(later); },
          [this](const std::string& id) { return lifecycle_.IsOpen(id); });
    }
    if (joined) {
      lifecycle_.FiredAgain(firing.event.rule_id, firing.source, firing.event.text);
      for (const std::unique_ptr<IncidentSink>& sink : sinks_) {
        sink->FollowedUp(joined->incident_id, firing, joined->why);
      }
      continue;  // the same failure: no incident of its own, no second capture
    }
    const ops::FiringLog::Said said = ops::FiringLog::Describe(firing);
    if (stream != nullptr) {
      // Held before Add moves the firing; released when the incident is written (or at
      // once, below, when it joined nothing).
      stream->HoldForIncident(firing);
    }
    // For a firing that opens nothing while an incident of its rule is open here: that
    // incident keeps it, and the record of it, a follow-up, keeps it across a restart.
    std::optional<detect::Firing> again;
    if (lifecycle_.Follows(firing.event.rule_id, firing.source)) {
      again = firing;
    }
    const detect::IncidentBuilder::Disposition disposition = builder_.Add(std::move(firing), now);
    if (disposition == detect::IncidentBuilder::Disposition::kCoolingDown && again) {
      for (const std::string& id :
           lifecycle_.FiredAgain(again->event.rule_id, again->source, again->event.text)) {
        for (const std::unique_ptr<IncidentSink>& sink : sinks_) {
          sink->FollowedUp(id, *again, "its rule fired again while cooling down");
        }
      }
    }
    for (const std::unique_ptr<IncidentSink>& sink : sinks_) {
      sink->Fired(said, disposition, Settling());
    }
  }
  if (!builder_.open() && stream != nullptr) {
    stream->ReleaseIncidentHold();
  }
  if (resolved) {
    RecordResolved();
  }
  ScheduleSettle();
}

const detect::Incident* IncidentFlow::Settling() const {
  return builder_.open() ? &*builder_.open() : nullptr;
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
  const SteadyTime now = env_.SteadyNow();
  if (const std::optional<SteadyTime> due = builder_.SettlesAt();
      due && now >= *due && now - *due < kTracebackWait && owner_.traceback_open &&
      owner_.traceback_open()) {
    // Its traceback, most likely, begun with the failure and decided once its writer is
    // quiet: it joins before the incident is told.
    settle_->Start(kTracebackPoll, {});
    return;
  }
  if (std::optional<detect::Incident> incident =
          builder_.TakeSettled(env_.SteadyNow(), env_.WallNow())) {
    Write(*incident, {}, nullptr);
    // Its end told before it was written ("nfs: server X OK" within the settle time).
    for (const detect::Firing& line : std::exchange(resolving_while_settling_, {})) {
      resolving_.Resolve(line, lifecycle_, env_.WallNow());
    }
    RecordResolved();
  } else {
    ScheduleSettle();
  }
  if (!builder_.open()) {
    for (const std::unique_ptr<IncidentSink>& sink : sinks_) {
      sink->SettleEnded();
    }
  }
  owner_.settled();
}

std::shared_ptr<const collect::Redactor> IncidentFlow::redactor_for_text() {
  if (!capturer_) {  // not configured yet: the built-in patterns
    capturer_ = MakeCapturer();
  }
  return capturer_->redactor();
}

std::unique_ptr<capture::Capturer> IncidentFlow::MakeCapturer() {
  auto capturer = std::make_unique<capture::Capturer>(
      env_, config_.capture, [this](const capture::CaptureOutcome& early) {
        for (const std::unique_ptr<IncidentSink>& sink : sinks_) {
          sink->EarlyCaptured(early);
        }
      });
  capturer->set_stack_rules(stack_rules_);
  return capturer;
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

void IncidentFlow::OpenPeerIncident(detect::PeerLink link) {
  detect::Incident incident = builder_.Peer(std::move(link), env_.WallNow());
  Write(incident, {}, nullptr);
}

void IncidentFlow::TellActed(const ops::SchedulerAction& action) {
  for (const std::unique_ptr<IncidentSink>& sink : sinks_) {
    sink->Acted(action);
  }
}

bool IncidentFlow::idle() const {
  return !builder_.open() && capturing_.empty() &&
         std::all_of(sinks_.begin(), sinks_.end(),
                     [](const std::unique_ptr<IncidentSink>& sink) { return sink->idle(); });
}

void IncidentFlow::Write(detect::Incident& incident, const ManualOptions& options,
                         const Done& done) {
  if (owner_.may_record && !owner_.may_record()) {
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
  PlaceAttempt(incident);
  if (!incident.peer && incident.reason.empty() && incident.kind != rules::RuleKind::kWarning &&
      incident.kind != rules::RuleKind::kSlow) {
    last_failure_verdict_ = incident.verdict.verdict;
  }
  // Open from the moment it opened: an advance during its settle time resolves it at once.
  const auto ago = std::max(WallTime::duration::zero(), env_.WallNow() - incident.opened);
  lifecycle_.Open(incident, env_.SteadyNow() - std::chrono::duration_cast<Duration>(ago));
  ++incidents_written_;
  last_incident_ = incident.id;
  follow_ups_.Remember(incident, incident.peer ? incident.job.id : OwnJobId(incident),
                       lifecycle_.IsOpen(incident.id), env_.SteadyNow(),
                       config_.incident.follow_up);
  for (const std::unique_ptr<IncidentSink>& sink : sinks_) {
    sink->Recorded(incident);
  }
  owner_.recorded();
  Capture(incident, options, done);
}

void IncidentFlow::RecordResolved() {
  for (const ops::Resolution& resolution : lifecycle_.TakeResolved()) {
    Resolve(resolution);
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
  Resolve(resolution);
  return resolution;
}

void IncidentFlow::Resolve(const ops::Resolution& resolution) {
  // The same stall after a recovery is a new failure, not a repeat within the cooldown.
  builder_.EndCooldown(resolution.rules);
  for (const std::unique_ptr<IncidentSink>& sink : sinks_) {
    sink->Resolved(resolution);
  }
}

void IncidentFlow::Capture(const detect::Incident& incident, const ManualOptions& options,
                           const Done& done) {
  detect::Incident facts = incident;  // for the hooks: what they are told, not every line
  facts.firings.clear();
  if (!config_.capture.enabled ||
      (incident.kind == rules::RuleKind::kWarning && incident.reason.empty() && !incident.peer)) {
    capture::CaptureOutcome outcome;
    outcome.incident_id = incident.id;
    outcome.error =
        config_.capture.enabled ? "no bundle for a warning" : "capture is disabled in the config";
    Conclude(facts, outcome, done);
    return;
  }
  capture::CaptureRequest request;
  request.incident = incident;
  request.reason = incident.reason;
  request.container = options.container;
  request.extra_logs = options.extra_logs;
  request.extra_paths = options.extra_paths;
  // A manual snapshot is of a job that may be healthy: no rank is stopped unless it asked. Nor
  // is one of a slow job, which runs on: its own slow incident, or the capture for another
  // node's (each samples where its ranks wait instead, which compares the nodes).
  const bool slow =
      incident.kind == rules::RuleKind::kSlow || (incident.peer && incident.peer->kind == "slow");
  request.pause_ranks = (incident.reason.empty() && !slow) || options.stacks;
  processes_.FillCapture(request);
  for (const std::unique_ptr<IncidentSink>& sink : sinks_) {
    sink->AddToCapture(request);
  }
  capturing_.push_back(incident.id);
  capturer_->Capture(std::move(request),
                     [this, done, facts](const capture::CaptureOutcome& outcome) {
                       std::erase(capturing_, outcome.incident_id);
                       for (const std::unique_ptr<IncidentSink>& sink : sinks_) {
                         sink->Captured(outcome);
                       }
                       Conclude(facts, outcome, done);
                       owner_.settled();
                     });
}

void IncidentFlow::Conclude(const detect::Incident& facts, const capture::CaptureOutcome& outcome,
                            const Done& done) {
  if (!aborted_) {
    const detect::Incident told = ConcludedFacts(facts, outcome);
    for (const std::unique_ptr<IncidentSink>& sink : sinks_) {
      sink->Concluded(told, outcome);
    }
  }
  if (done) {
    done(outcome);
  }
}

detect::Incident ConcludedFacts(const detect::Incident& facts,
                                const capture::CaptureOutcome& outcome) {
  detect::Incident told = facts;
  if (outcome.stacks_say && facts.verdict.verdict.cause == rules::Cause::kUnknown) {
    told.verdict.verdict = outcome.stacks_say->verdict;
    told.verdict.why = "the stacks: " + outcome.stacks_say->says;
  }
  return told;
}

void IncidentFlow::Abort() {
  aborted_ = true;
  std::optional<capture::CaptureOutcome> early;
  if (capturer_) {
    early = capturer_->Abort();  // kept: a worker may still be finishing with it
  }
  // Captures under way or queued are abandoned: the sinks hear of each (the log records it,
  // and the next start reports it again: ops/uncaptured_incidents.h), except that one whose
  // early bundle was written has that for its bundle.
  for (const std::string& id : capturing_) {
    capture::CaptureOutcome outcome;
    if (early && early->incident_id == id) {
      outcome = *early;
      outcome.error = std::string(ops::kInterruptedCapture) +
                      "; its early bundle, without what was still being taken, stays";
    } else {
      outcome.incident_id = id;
      outcome.error = std::string(ops::kInterruptedCapture);
    }
    for (const std::unique_ptr<IncidentSink>& sink : sinks_) {
      sink->CaptureInterrupted(outcome);
    }
  }
  capturing_.clear();
  settle_.reset();
  for (const std::unique_ptr<IncidentSink>& sink : sinks_) {
    sink->Stopping();
  }
}

void IncidentFlow::FillSnapshot(ops::DaemonSnapshot& snapshot) const {
  snapshot.incidents_written = incidents_written_;
  snapshot.incidents_file = incidents_file_;
  snapshot.last_incident = last_incident_;
  if (const auto& open = builder_.open()) {
    snapshot.settling_incident = ops::SettlingIncidentSnapshot{
        open->id, detect::IncidentKindName(*open), open->summary, open->rules};
  }
  for (const ops::OpenIncident& open : lifecycle_.open()) {
    snapshot.open_incidents.push_back(
        {open.id, std::string(rules::RuleKindName(open.kind)), open.opened_wall});
  }
  for (const std::unique_ptr<IncidentSink>& sink : sinks_) {
    sink->FillSnapshot(snapshot);
  }
}

std::uint64_t IncidentFlow::Activity() const {
  std::uint64_t sum = incidents_written_;
  for (const std::unique_ptr<IncidentSink>& sink : sinks_) {
    sum = sum * 31 + sink->Activity();
  }
  return sum;
}

}  // namespace trainwatch::incident
