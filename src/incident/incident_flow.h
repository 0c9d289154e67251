// IncidentFlow: the incident pipeline. Firings join the open incident (settle, cooldown:
// IncidentBuilder); a settled one gets its job and recurrence, is followed until it resolves
// (IncidentLifecycle), and each sink hears of it (incident/incident_sink.h: the log, the
// metrics, Alertmanager, the shared directory...); then it is captured into a bundle and the
// sinks hear of that. What it records and where it goes is the sinks'; this is the order of
// things. Owned by the Daemon; loop thread only.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "capture/capture_types.h"
#include "capture/capturer.h"
#include "config/daemon_config.h"
#include "core/env.h"
#include "detect/incident_builder.h"
#include "detect/stream_detector.h"
#include "incident/follow_ups.h"
#include "incident/incident_sink.h"
#include "incident/job_processes.h"
#include "incident/resolving_lines.h"
#include "ops/attempt_ledger.h"
#include "ops/daemon_snapshot.h"
#include "ops/incident_lifecycle.h"
#include "ops/incident_log.h"
#include "ops/recurrence_book.h"

namespace trainwatch::incident {

class IncidentFlow final : public Pipeline {
 public:
  struct Owner {
    // About to record an incident: the state_dir must be there (it may have been deleted;
    // the Daemon restores it). False: it is another daemon's now, and nothing is recorded.
    std::function<bool()> may_record;
    // An incident was recorded: the streams may release the offsets they held for it.
    std::function<void()> recorded;
    // An incident settled, or a capture or its hooks finished (the wrap may wait to exit).
    std::function<void()> settled;
    // Whether a traceback is still being read in some stream (its writer not yet quiet).
    // Optional: an incident whose settle time is over waits for it, at most
    // kTracebackWait, so that a traceback printed with the failure (a shared log of many
    // ranks keeps its writer busy) joins it instead of opening an incident of its own.
    std::function<bool()> traceback_open;
  };
  static constexpr std::chrono::milliseconds kTracebackWait{5000};
  // What a manual snapshot adds to a capture.
  struct ManualOptions {
    std::string container;
    std::vector<std::string> extra_logs;
    std::vector<std::string> extra_paths;
    bool stacks = false;  // also by the tools that stop a rank (eu-stack, gdb)
  };
  using Done = std::function<void(const capture::CaptureOutcome& outcome)>;

  IncidentFlow(Env& env, std::string incidents_file, JobProcesses& processes, Owner owner);
  ~IncidentFlow() override;
  // Each sink, in the order they are told; before LoadHistory.
  void AddSink(std::unique_ptr<IncidentSink> sink);

  // What the log says of earlier runs; restores each rule's cooldown from it.
  ops::IncidentHistory LoadHistory();
  void Configure(const config::DaemonConfig& config);
  // The site's stack rules of the loaded rule files (diagnose/stack_rules.h), for captures.
  void SetStackRules(std::shared_ptr<const diagnose::StackRules> rules);
  // The resolving rules of the loaded rules (incident/resolving_lines.h).
  void SetResolvingRules(ResolvingLines resolving) { resolving_ = std::move(resolving); }
  // Once configured: the sinks start (the log reports captures an earlier run left unfinished).
  void Start();

  void OnFirings(std::vector<detect::Firing>& firings, detect::StreamDetector* stream);
  // The writer of `stream` went on after the crashes it reported up to `line` (caught
  // exceptions): within the open incident they are warnings now.
  void CrashCaught(const std::string& source, const std::string& stream, std::uint64_t line) {
    builder_.CrashCaught(source, stream, line);
  }
  // Recorded incidents not yet resolved: only then is ObserveStream worth calling.
  bool any_unresolved() const { return lifecycle_.any_open(); }
  // What a stream shows now (ops/incident_lifecycle.h); RecordResolved tells what it resolved.
  void ObserveStream(const ops::StreamActivity& activity, WallTime wall_now) {
    lifecycle_.Observe(activity, wall_now);
  }
  void RecordResolved();
  // The job and node: from `incident`'s writers' environments (when given), then the other
  // processes known to write the watched streams.
  detect::JobIdentity JobOf(const detect::Incident* incident) const;
  // The job id `firing`'s writers name (or the config's); empty when none does.
  std::string JobIdOf(const detect::Firing& firing) const;
  // The job id `incident`'s own firings' writers name, the exited ones included.
  std::string OwnJobId(const detect::Incident& incident) const;
  // `trainwatch incidents ack ID`: resolves an incident this daemon follows, and records it.
  // Fails for one it does not follow (resolved already, never open here, or forgotten past
  // IncidentLifecycle::kMaxOpen): the client checks the log and records it there itself.
  Result<ops::Resolution> Acknowledge(const std::string& id, const std::string& why);
  // `trainwatch snapshot`: a manual incident, recorded and captured now; `done` gets the bundle.
  void Manual(const std::string& reason, const ManualOptions& options, const Done& done);
  // No incident open, no capture running, no sink at work (hooks running or waiting).
  bool idle() const;
  // No incident open and no capture running (hooks may still run).
  bool captured() const { return !builder_.open() && capturing_.empty(); }
  // No capture runs or waits (an incident may be open).
  bool capture_idle() const { return capturing_.empty(); }
  // The incident ids whose capture runs or waits, oldest first.
  const std::vector<std::string>& capturing() const { return capturing_; }
  // The daemon stops: what runs is killed, what waits forgotten (and said so); a capture under
  // way or queued is told to the sinks as interrupted.
  void Abort();
  // The incident parts of the daemon's snapshot.
  void FillSnapshot(ops::DaemonSnapshot& snapshot) const;
  std::uint64_t Activity() const;
  // The one redactor for log text leaving the daemon (built at its first use).
  std::shared_ptr<const collect::Redactor> redactor_for_text();
  const std::string& incidents_file() const { return incidents_file_; }
  std::uint64_t written() const { return incidents_written_; }
  const std::string& last_incident() const { return last_incident_; }
  // The verdict of the last failure recorded (a crash, hang, device failure, a loss gone NaN;
  // not a slowdown, a warning, a manual snapshot or a peer's capture), once decided.
  const std::optional<rules::Verdict>& last_failure_verdict() const {
    return last_failure_verdict_;
  }
  // The job's attempts as this node saw them fail, oldest first.
  std::vector<ops::AttemptEntry> AttemptsOf(const std::string& job_id) const {
    return attempts_.Of(job_id);
  }

  // Pipeline, for the sinks.
  bool Follows(const std::string& id) const override { return lifecycle_.IsOpen(id); }
  const detect::Incident* Settling() const override;
  void OpenPeerIncident(detect::PeerLink link) override;
  void TellActed(const ops::SchedulerAction& action) override;

 private:
  void ScheduleSettle();
  void WriteSettled();
  void Write(detect::Incident& incident, const ManualOptions& options, const Done& done);
  // The incident's place among its job's attempts, and the retry policy's decision, which
  // becomes its action (incident_flow_attempt.cpp).
  void PlaceAttempt(detect::Incident& incident);
  // The pids of `incident`'s job's processes here: its ranks (or its writers).
  std::vector<int> AttemptPids(const detect::Incident& incident) const;
  void Capture(const detect::Incident& incident, const ManualOptions& options, const Done& done);
  std::unique_ptr<capture::Capturer> MakeCapturer();
  void Conclude(const detect::Incident& facts, const capture::CaptureOutcome& outcome,
                const Done& done);
  void Resolve(const ops::Resolution& resolution);

  Env& env_;
  std::string incidents_file_;
  JobProcesses& processes_;
  Owner owner_;
  std::vector<std::unique_ptr<IncidentSink>> sinks_;
  config::DaemonConfig config_;
  detect::IncidentBuilder builder_{{}};
  FollowUps follow_ups_;
  ops::RecurrenceBook recurrences_;
  ops::AttemptLedger attempts_;
  std::string boot_id_;  // read at the first incident
  ops::IncidentLifecycle lifecycle_;
  std::string host_;
  std::unique_ptr<capture::Capturer> capturer_;  // MakeCapturer: its early bundles to the sinks
  std::shared_ptr<const diagnose::StackRules> stack_rules_;
  ResolvingLines resolving_;
  // Resolving lines that came while an incident settled, for it once written.
  static constexpr std::size_t kMaxResolvingWhileSettling = 64;
  std::vector<detect::Firing> resolving_while_settling_;
  std::unique_ptr<LoopTimer> settle_;
  std::vector<std::string> capturing_;  // the incidents whose capture runs or waits
  bool aborted_ = false;
  std::uint64_t incidents_written_ = 0;
  std::string last_incident_;
  std::optional<rules::Verdict> last_failure_verdict_;
};

}  // namespace trainwatch::incident
