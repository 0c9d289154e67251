#include "capture/capturer.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <filesystem>

#include "bundle/bundle_writer.h"
#include "bundle/retention.h"
#include "capture/builtin_collectors.h"
#include "capture/bundle_contents.h"
#include "capture/bundle_name.h"
#include "capture/bundle_report.h"
#include "capture/capture_job.h"
#include "capture/command_plan.h"
#include "capture/job_identity.h"
#include "capture/manifest.h"
#include "capture/speakers.h"
#include "cluster/peer_record.h"
#include "collect/container.h"
#include "collect/process_collectors.h"
#include "detect/incident_root.h"

namespace trainwatch::capture {
namespace {

// How long the early bundle waits for the tools' outputs (hl-smi and the like answer in a
// fraction of a second, unless the device is wedged) before it is written without them.
constexpr auto kEarlyWait = std::chrono::seconds(1);

bundle::RetentionPolicy RetentionOf(const config::CaptureConfig& config) {
  return {config.max_count, config.max_bytes, config.min_free_bytes, config.min_free_percent};
}

}  // namespace

Capturer::Capturer(Env& env, config::CaptureConfig config, Done on_early)
    : env_(env),
      config_(std::move(config)),
      runner_(env),
      ranks_(env),
      on_early_(std::move(on_early)) {}

Capturer::~Capturer() { StopWork(); }

void Capturer::Reconfigure(config::CaptureConfig config) {
  if (config.redact_names != config_.redact_names ||
      config.redact_patterns != config_.redact_patterns) {
    redactor_.reset();  // rebuilt with the new rules at its next use
  }
  config_ = std::move(config);  // the capture under way keeps its own copy
}

Result<std::shared_ptr<const collect::Redactor>> Capturer::BuildRedactor() {
  if (!redactor_) {
    Result<std::shared_ptr<const collect::Redactor>> made =
        collect::Redactor::Create({config_.redact_names, config_.redact_patterns},
                                  collect::RedactorMatching::kPrefiltered, config_.cache_dir);
    if (!made) {
      return made.error();
    }
    redactor_ = std::move(*made);
  }
  return redactor_;
}

std::shared_ptr<const collect::Redactor> Capturer::redactor() {
  Result<std::shared_ptr<const collect::Redactor>> made = BuildRedactor();
  if (made) {
    return std::move(*made);
  }
  spdlog::error("capture redact: {}; redacting with the built-in patterns alone",
                made.error().message);
  Result<std::shared_ptr<const collect::Redactor>> builtin = collect::Redactor::Create();
  if (!builtin) {  // the built-in table is compiled by the tests: cannot happen
    std::terminate();
  }
  return std::move(*builtin);
}

void Capturer::StopWork() {
  aborted_ = true;
  queue_.clear();
  runner_.Abort();
  ranks_.Abort();
  early_timer_.reset();
  deadline_timer_.reset();
}

std::optional<CaptureOutcome> Capturer::Abort() {
  StopWork();
  if (!job_ || job_->phase == BundlePhase::kWritingEarly || !job_->early_written) {
    return std::nullopt;
  }
  CaptureOutcome early;
  early.incident_id = job_->request.incident.id;
  early.path = job_->early_written->path;
  early.bytes = job_->early_written->bytes;
  early.host = job_->host;
  return early;
}

void Capturer::Capture(CaptureRequest request, Done done) {
  if (queue_.size() >= kMaxQueued) {
    CaptureOutcome outcome;
    outcome.incident_id = request.incident.id;
    outcome.error = "not captured: " + std::to_string(queue_.size()) +
                    " captures already wait (an incident storm)";
    done(outcome);
    return;
  }
  queue_.emplace_back(std::move(request), std::move(done));
  StartNext();
}

void Capturer::StartNext() {
  if (running_ || queue_.empty() || aborted_) {
    return;
  }
  if (!redactor_) {
    Result<std::shared_ptr<const collect::Redactor>> made = BuildRedactor();
    if (!made) {
      // The config was checked when loaded; this only happens if that check was skipped.
      CaptureOutcome outcome;
      outcome.incident_id = queue_.front().first.incident.id;
      outcome.error = "capture redact: " + made.error().message;
      Done done = std::move(queue_.front().second);
      queue_.pop_front();
      done(outcome);
      return StartNext();
    }
  }
  running_ = true;
  job_ = std::make_shared<Job>();
  job_->host = Hostname();
  job_->started = env_.SteadyNow();
  job_->request = std::move(queue_.front().first);
  job_->done = std::move(queue_.front().second);
  queue_.pop_front();
  job_->config = config_;
  job_->redactor = redactor_;
  job_->dir = config_.bundles_dir;
  job_->file_name = BundleFileName(job_->request.incident, job_->host);
  // A bar's label is log text (a tqdm desc may quote a URL with its password), and so are
  // the streams' names: redacted before the manifest and the report quote them.
  for (ProgressLane& lane : job_->request.lanes) {
    redactor_->RedactText(lane.bar, job_->env_redactions);
    redactor_->RedactText(lane.stream, job_->env_redactions);
  }
  // Which processes are the job's is read from /proc on the pool (a scan of every process for
  // process_pattern); the capture goes on from there.
  // A capture that never ends (a part of it wedged on a hung file system) is given up at
  // its deadline, so that the captures queued behind it still run.
  deadline_timer_ = env_.NewTimer([this] { AbandonWedged(); });
  deadline_timer_->Start(kCaptureDeadline, {});
  // The pool's work holds the job it works on; a completion for a job given up meanwhile is
  // ignored (the job_ then is another).
  env_.RunOnPool([job = job_, proc_root = env_.proc_root()] { FindJobProcesses(*job, proc_root); },
                 [this, job = job_] {
                   if (job == job_) {
                     OnProcessesKnown();
                   }
                 });
}

void Capturer::FindJobProcesses(Job& job, const std::string& proc_root) {
  CaptureRequest& request = job.request;
  const std::string& pattern = job.config.process_pattern;
  // Training processes named by the config's pattern join the known writers.
  if (!pattern.empty()) {
    Result<std::vector<collect::ProcessInfo>> found = collect::FindProcesses(pattern, proc_root);
    if (!found) {
      job.pattern_error = found.error().message;
    } else {
      for (const collect::ProcessInfo& process : *found) {
        if (std::find(request.pids.begin(), request.pids.end(), process.pid) ==
            request.pids.end()) {
          request.pids.push_back(process.pid);
        }
      }
    }
  }
  // Only the processes of the users whose logs raised it (none left out for the kernel's,
  // root's or an operator's): one user's line must not pause another user's ranks.
  const std::set<uid_t> speakers = IncidentSpeakers(request.incident);
  KeepSpeakersProcesses(speakers, proc_root, request.pids, job.speakers_note);
  if (!speakers.empty()) {
    std::erase_if(request.remembered, [&](const source::WriterProcess& writer) {
      return writer.uid && !speakers.contains(*writer.uid);
    });
  }
  if (request.container.empty()) {
    for (int pid : request.pids) {
      if (auto container = collect::ContainerOfProcess(std::to_string(pid), proc_root)) {
        request.container = container->id;
        break;
      }
    }
  }
  if (auto self = collect::ContainerOfProcess("self", proc_root)) {
    job.self_container = self->id;
  }
  std::error_code ignored;
  std::filesystem::create_directories(job.dir, ignored);  // and disk usage can see it
}

void Capturer::OnProcessesKnown() {
  if (!job_) {
    return;
  }
  if (aborted_) {
    job_.reset();
    running_ = false;
    return;
  }
  if (!job_->pattern_error.empty()) {
    spdlog::warn("capture process_pattern: {}", job_->pattern_error);
  }
  if (!job_->speakers_note.empty()) {
    spdlog::warn("incident {}: {}", job_->request.incident.id, job_->speakers_note);
  }
  early_timer_ = env_.NewTimer([this] {
    if (job_) {
      if (job_->phase == BundlePhase::kGathering) {
        job_->phase = BundlePhase::kEarlyWaitOver;
      }
      MaybeWrite();
    }
  });
  early_timer_->Start(kEarlyWait, {});
  // The commands start now (they take longest); the in-process collectors run meanwhile.
  runner_.Run(CommandsFor(job_->config.commands, job_->request.incident, job_->request.pids,
                          job_->request.container),
              [this](std::vector<collect::CollectorResult> results) {
                OnCommandsDone(std::move(results));
              });
  if (job_->config.stacks && (job_->request.incident.kind != rules::RuleKind::kWarning ||
                              !job_->request.reason.empty() || job_->request.incident.peer)) {
    diagnose::JobClues clues;
    clues.progress = job_->request.progress;
    // Only an error of its own makes a rank "the first to print an error": never a stall, a
    // silence, or a peer's report of another's failure.
    clues.first_error_rank = cluster::FirstFailingRank(job_->request.incident);
    clues.error_printed = detect::RootError(job_->request.incident.firings) != nullptr;
    clues.reported_straggler = detect::ReportedStraggler(job_->request.incident);
    clues.consequences_only = detect::OnlyConsequences(job_->request.incident.firings);
    clues.stack_rules = stack_rules_;
    ranks_.set_max_ranks(job_->config.max_ranks);
    ranks_.set_gdb_index_dir(job_->config.cache_dir.empty() ? std::string()
                                                            : job_->config.cache_dir + "/gdb");
    ranks_.Run(job_->request.pids, job_->request.remembered, std::move(clues),
               job_->request.pause_ranks, job_->redactor,
               [this](RankReport report, const collect::RedactionCounts& counts) {
                 OnRanksDone(std::move(report), counts);
               });
  } else {
    job_->parts.Done(CapturePart::kRanks);
  }
  env_.RunOnPool(
      [job = job_, proc_root = env_.proc_root()] {
        job->builtins = RunBuiltinCollectors(job->request, job->config, job->dir, *job->redactor,
                                             job->builtin_redactions, proc_root);
      },
      [this, job = job_] {
        if (job == job_) {
          OnBuiltinsDone();
        }
      });
}

void Capturer::OnCommandsDone(std::vector<collect::CollectorResult> results) {
  if (!job_) {
    return;
  }
  job_->commands = std::move(results);
  for (collect::CollectorResult& skipped : SkippedForNoContainer(
           job_->config.commands, job_->request.incident, job_->request.container)) {
    job_->commands.push_back(std::move(skipped));
  }
  job_->parts.Done(CapturePart::kCommands);
  MaybeWrite();
}

void Capturer::OnRanksDone(RankReport report, const collect::RedactionCounts& counts) {
  if (!job_) {
    return;
  }
  job_->env_redactions.Merge(counts);
  job_->ranks = std::move(report);
  job_->parts.Done(CapturePart::kRanks);
  MaybeWrite();
}

void Capturer::MaybeWrite() {
  Job& job = *job_;
  // Stopping: nothing new is started (an early bundle already written stays). Once the
  // complete bundle is under way, a late timer or callback must not start another.
  if (aborted_ || job.phase == BundlePhase::kWritingComplete ||
      !job.parts.done(CapturePart::kBuiltins)) {
    return;
  }
  if (job.parts.all_done()) {
    if (job.phase != BundlePhase::kWritingEarly) {  // else OnEarlyWritten goes on
      WriteBundle();
    }
    return;
  }
  if (job.early_to_come() &&
      (job.phase == BundlePhase::kEarlyWaitOver || job.parts.done(CapturePart::kCommands))) {
    WriteEarlyBundle();
  }
}

void Capturer::StopEarlyWait() {
  if (early_timer_) {
    early_timer_->Stop();
  }
}

void Capturer::WriteEarlyBundle() {
  Job& job = *job_;
  job.phase = BundlePhase::kEarlyDone;  // until it is on the pool, below
  StopEarlyWait();
  std::string pending = job.parts.done(CapturePart::kCommands) ? "" : "the tools' outputs";
  if (!job.parts.done(CapturePart::kRanks)) {
    pending += pending.empty() ? "the ranks' stacks" : " and the ranks' stacks";
  }
  job.early_why = "written while " + pending +
                  " were still being taken; the complete bundle replaces this one under the "
                  "same name";
  // The small parts (the incident, the tools' outputs, the environment, packages, the log
  // tails): copies, as the complete bundle needs them too. Large ones wait for it.
  std::uint64_t estimate = 0;
  std::vector<collect::Artifact> artifacts =
      CopySmallArtifacts(job.builtins, job.commands, estimate);
  const bundle::RetentionPolicy policy = RetentionOf(job.config);
  std::error_code ignored;
  std::filesystem::create_directories(job.dir, ignored);
  bundle::RemovePartialBundles(job.dir);
  job.deleted = bundle::MakeRoom(job.dir, policy, estimate);
  if (!bundle::Fits(job.dir, policy, estimate)) {
    return;  // the complete bundle will say what did not fit
  }
  job.phase = BundlePhase::kWritingEarly;
  StartWrite(std::move(artifacts), StatusesOf(job.builtins, job.commands), job.env_redactions,
             /*early=*/true);
}

void Capturer::OnEarlyWritten() {
  Job& job = *job_;
  job.phase = BundlePhase::kEarlyDone;
  job.early_at = env_.SteadyNow();
  if (job.early_written && on_early_) {
    CaptureOutcome early;
    early.incident_id = job.request.incident.id;
    early.path = job.early_written->path;
    early.bytes = job.early_written->bytes;
    early.error = job.early_why;  // why it is early: what it still lacks
    early.capture_seconds = std::chrono::duration<double>(job.early_at - job.started).count();
    early.host = job.host;
    on_early_(early);
  } else if (!job.early_written) {
    spdlog::warn("incident {}: no early bundle: {}", job.request.incident.id,
                 job.early_written.error().message);
  }
  if (aborted_) {
    job_.reset();  // the daemon is stopping: the early bundle is what there is
    running_ = false;
    return;
  }
  MaybeWrite();
}

void Capturer::OnBuiltinsDone() {
  if (!job_) {
    return;
  }
  job_->parts.Done(CapturePart::kBuiltins);
  job_->env_redactions.Merge(job_->builtin_redactions);
  if (aborted_) {
    job_.reset();
    running_ = false;
    return;
  }
  MaybeWrite();
}

void Capturer::WriteBundle() {
  Job& job = *job_;
  job.phase = BundlePhase::kWritingComplete;
  StopEarlyWait();
  if (job.ranks && !job.ranks->ranks.empty()) {
    job.builtins.push_back(std::move(job.ranks->result));
  }
  const std::uint64_t estimate = ArtifactBytes(job.builtins, job.commands);
  const bundle::RetentionPolicy policy = RetentionOf(job.config);
  std::error_code ignored;
  std::filesystem::create_directories(job.dir, ignored);
  bundle::RemovePartialBundles(job.dir);
  // Uncompressed sizes: an upper bound for what the bundle takes.
  // An early bundle of this incident is replaced, not counted.
  std::vector<std::string> deleted =
      bundle::MakeRoom(job.dir, policy, estimate, /*replacing=*/job.file_name);
  job.deleted.insert(job.deleted.end(), deleted.begin(), deleted.end());
  if (!bundle::Fits(job.dir, policy, estimate)) {
    job.reduced = true;
    job.reduced_why = "a full bundle (up to " + std::to_string(estimate >> 20) +
                      " MiB) would break min_free on " + job.dir +
                      ": logs and large outputs left out";
  }
  std::vector<collect::Artifact> artifacts = TakeArtifacts(job.builtins, job.commands, job.reduced);
  StartWrite(std::move(artifacts), StatusesOf(job.builtins, job.commands), job.env_redactions,
             /*early=*/false);
}

void Capturer::StartWrite(std::vector<collect::Artifact> artifacts,
                          std::vector<collect::CollectorResult> collectors,
                          collect::RedactionCounts redactions, bool early) {
  Job& job = *job_;
  // The worker owns the artifacts while it writes; the job stays put until it is done, and
  // what of it the loop may still change (the ranks, while an early bundle is written) is
  // not read here.
  std::string ranks_json = !early && job.ranks ? RanksJson(*job.ranks) : std::string();
  env_.RunOnPool(
      [bundle_job = job_, artifacts = std::move(artifacts), collectors = std::move(collectors),
       redactions = std::move(redactions), ranks_json = std::move(ranks_json),
       created = env_.WallNow(), early]() mutable {
        bundle::BundleRequest request;
        request.dir = bundle_job->dir;
        request.file_name = bundle_job->file_name;
        request.artifacts = std::move(artifacts);
        request.redactor = bundle_job->redactor.get();
        request.level = bundle_job->config.compression_level;
        request.make_manifest = [&](const bundle::BundleSummary& summary) {
          collect::RedactionCounts counts = summary.redactions;
          counts.Merge(redactions);
          return ManifestJson(bundle_job->request, collectors, summary, counts,
                              !early && bundle_job->reduced, bundle_job->reduced_why,
                              bundle_job->host, bundle_job->self_container, created, ranks_json,
                              early ? bundle_job->early_why : std::string());
        };
        request.make_report = [&](const std::string& manifest) {
          return BundleReport(manifest, request.artifacts, bundle_job->redactor.get());
        };
        (early ? bundle_job->early_written : bundle_job->written) = bundle::WriteBundle(request);
      },
      [this, early, job = job_] {
        if (job != job_) {
          return;  // given up at its deadline meanwhile
        }
        if (early) {
          OnEarlyWritten();
        } else {
          OnWritten();
        }
      });
}

void Capturer::AbandonWedged() {
  std::shared_ptr<Job> job = std::move(job_);
  deadline_timer_.reset();
  early_timer_.reset();
  if (!job) {
    return;
  }
  runner_.Abort();  // its tools, killed
  ranks_.Abort();   // its debuggers, and the ranks they held let go
  running_ = false;
  std::string stuck = job->parts.Pending();
  if (job->phase == BundlePhase::kWritingEarly || job->phase == BundlePhase::kWritingComplete) {
    stuck += (stuck.empty() ? "" : ", ") + std::string("the bundle's write");
  }
  CaptureOutcome outcome;
  outcome.incident_id = job->request.incident.id;
  outcome.host = job->host;
  outcome.capture_seconds = std::chrono::duration<double>(env_.SteadyNow() - job->started).count();
  outcome.error =
      "abandoned after " +
      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kCaptureDeadline).count()) +
      " s: " + (stuck.empty() ? std::string("a part") : stuck) +
      " never returned (wedged on a hung file system or device?)";
  if (job->phase != BundlePhase::kWritingEarly && job->early_written) {
    outcome.path = job->early_written->path;  // the evidence there is
    outcome.bytes = job->early_written->bytes;
    outcome.error += "; its early bundle stays";
  }
  spdlog::error("incident {}: capture {}; the next capture goes on", outcome.incident_id,
                outcome.error);
  job->done(outcome);
  StartNext();
}

void Capturer::OnWritten() {
  early_timer_.reset();
  deadline_timer_.reset();
  std::shared_ptr<Job> job = std::move(job_);
  running_ = false;
  const CaptureOutcome outcome = OutcomeOf(*job, env_.SteadyNow(), env_.WallNow());
  if (!aborted_) {
    job->done(outcome);
    StartNext();
  }
}

}  // namespace trainwatch::capture
