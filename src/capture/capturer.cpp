#include "capture/capturer.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <filesystem>

#include "bundle/bundle_writer.h"
#include "bundle/retention.h"
#include "capture/bundle_name.h"
#include "capture/bundle_report.h"
#include "capture/incident_filter.h"
#include "capture/job_identity.h"
#include "capture/manifest.h"
#include "collect/container.h"
#include "collect/exited_processes.h"
#include "collect/file_collectors.h"
#include "collect/process_collectors.h"
#include "collect/python_packages.h"
#include "collect/system_facts.h"
#include "detect/incident_json.h"

namespace trainwatch::capture {
namespace {

// In a reduced bundle (no room for a full one) only outputs this small stay.
constexpr std::uint64_t kReducedMaxArtifact = 64 * 1024;

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    text.replace(at, from.size(), to);
    at += to.size();
  }
  return text;
}

std::uint64_t SizeOf(const collect::Artifact& artifact) {
  return artifact.source_file.empty() ? artifact.content.size() : artifact.length;
}

}  // namespace

struct Capturer::Job {
  CaptureRequest request;
  Done done;
  SteadyTime started;
  std::string host = Hostname();
  std::string self_container;
  std::string pattern_error;  // why process_pattern found nothing, when it failed
  std::vector<collect::CollectorResult> commands;
  std::vector<collect::CollectorResult> builtins;
  collect::RedactionCounts env_redactions;
  bool commands_done = false;
  bool builtins_done = false;
  bool ranks_done = false;
  std::optional<RankReport> ranks;
  bool reduced = false;
  std::string reduced_why;
  std::vector<std::string> deleted;
  std::string dir;
  std::string file_name;
  Result<bundle::BundleResult> written = Error{"not written"};
  std::shared_ptr<const collect::Redactor> redactor;
  config::CaptureConfig config;
};

Capturer::Capturer(Env& env, config::CaptureConfig config)
    : env_(env), config_(std::move(config)), runner_(env), ranks_(env) {}

Capturer::~Capturer() { Abort(); }

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

void Capturer::Abort() {
  aborted_ = true;
  queue_.clear();
  runner_.Abort();
  ranks_.Abort();
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

std::vector<config::CommandConfig> Capturer::CommandsFor(const Job& job) const {
  std::vector<config::CommandConfig> commands;
  for (const config::CommandConfig& command : job.config.commands) {
    if (!WantedFor(command.when, job.request.incident)) {
      continue;
    }
    auto uses = [&](const std::string& placeholder) {
      return std::any_of(command.argv.begin(), command.argv.end(), [&](const std::string& arg) {
        return arg.find(placeholder) != std::string::npos;
      });
    };
    if (uses("{container}") && job.request.container.empty()) {
      continue;  // no container known for this job (recorded as skipped below)
    }
    std::vector<int> pids = uses("{pid}") ? job.request.pids : std::vector<int>{0};
    for (int pid : pids) {
      config::CommandConfig expanded = command;
      for (std::string& arg : expanded.argv) {
        arg = Replace(Replace(arg, "{pid}", std::to_string(pid)), "{container}",
                      job.request.container);
      }
      expanded.as = Replace(expanded.as, "{pid}", std::to_string(pid));
      if (uses("{pid}")) {
        expanded.name += "-" + std::to_string(pid);
      }
      commands.push_back(std::move(expanded));
    }
  }
  return commands;
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
  job_ = std::make_unique<Job>();
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
  Job& job = *job_;
  env_.RunOnPool([&job, proc_root = env_.proc_root()] { FindJobProcesses(job, proc_root); },
                 [this] { OnProcessesKnown(); });
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
  // The commands start now (they take longest); the in-process collectors run meanwhile.
  runner_.Run(CommandsFor(*job_), [this](std::vector<collect::CollectorResult> results) {
    OnCommandsDone(std::move(results));
  });
  if (job_->config.stacks && (job_->request.incident.kind != rules::RuleKind::kWarning ||
                              !job_->request.reason.empty() || job_->request.incident.peer)) {
    diagnose::JobClues clues;
    clues.progress = job_->request.progress;
    for (const detect::Firing& firing : job_->request.incident.firings) {
      if (firing.event.kind != rules::RuleKind::kWarning) {
        if ((clues.first_error_rank = diagnose::RankOfLine(firing.event.text))) {
          break;
        }
      }
    }
    ranks_.set_gdb_index_dir(job_->config.cache_dir.empty() ? std::string()
                                                            : job_->config.cache_dir + "/gdb");
    ranks_.Run(job_->request.pids, job_->request.remembered, std::move(clues), job_->redactor,
               [this](RankReport report, const collect::RedactionCounts& counts) {
                 OnRanksDone(std::move(report), counts);
               });
  } else {
    job_->ranks_done = true;
  }
  // The job stays in job_ until the pool is done with it (OnBuiltinsDone, OnWritten).
  Job& job = *job_;
  env_.RunOnPool(
      [&job, proc_root = env_.proc_root()] {
        const CaptureRequest& request = job.request;
        collect::CollectorResult incident;
        incident.name = "incident";
        collect::AddText(incident, "incident/incident.json",
                         detect::IncidentJson(request.incident) + "\n");
        collect::AddText(incident, "incident/firing-lines.txt", FiringLines(request.incident));
        job.builtins.push_back(std::move(incident));
        std::vector<pid_t> pids(request.pids.begin(), request.pids.end());
        job.builtins.push_back(
            collect::CollectEnvironment(pids, *job.redactor, job.env_redactions, proc_root));
        job.builtins.push_back(
            collect::CollectExitedProcesses(request.remembered, *job.redactor, job.env_redactions));
        job.builtins.push_back(collect::CollectProcesses(pids, proc_root));
        const char* path_variable = std::getenv("PATH");
        job.builtins.push_back(collect::CollectPythonPackages(
            pids, path_variable != nullptr ? path_variable : "", proc_root));
        job.builtins.push_back(collect::CollectSystemFacts(proc_root));
        std::vector<std::string> dirs = request.watched_dirs;
        dirs.push_back(job.dir);
        job.builtins.push_back(collect::CollectDiskUsage(dirs));
        std::vector<std::string> logs = request.log_files;
        logs.insert(logs.end(), request.extra_logs.begin(), request.extra_logs.end());
        job.builtins.push_back(collect::CollectLogTails(logs, job.config.log_tail_bytes));
        job.builtins.push_back(collect::CollectDirectory("habana_logs", job.config.habana_logs,
                                                         "habana_logs",
                                                         job.config.habana_logs_max_bytes));
        std::vector<std::string> paths = job.config.extra_paths;
        paths.insert(paths.end(), request.extra_paths.begin(), request.extra_paths.end());
        if (!paths.empty()) {
          job.builtins.push_back(collect::CollectPaths(paths, job.config.extra_max_bytes));
        }
      },
      [this] { OnBuiltinsDone(); });
}

void Capturer::OnCommandsDone(std::vector<collect::CollectorResult> results) {
  if (!job_) {
    return;
  }
  job_->commands = std::move(results);
  for (const config::CommandConfig& command : job_->config.commands) {
    const bool container = std::any_of(
        command.argv.begin(), command.argv.end(),
        [](const std::string& a) { return a.find("{container}") != std::string::npos; });
    if (container && job_->request.container.empty() &&
        WantedFor(command.when, job_->request.incident)) {
      collect::CollectorResult skipped;
      skipped.name = command.name;
      skipped.status = collect::CollectorStatus::kSkipped;
      skipped.detail = "no container known for this job";
      job_->commands.push_back(std::move(skipped));
    }
  }
  job_->commands_done = true;
  MaybeWrite();
}

void Capturer::OnRanksDone(RankReport report, const collect::RedactionCounts& counts) {
  if (!job_) {
    return;
  }
  job_->env_redactions.Merge(counts);
  job_->ranks = std::move(report);
  job_->ranks_done = true;
  MaybeWrite();
}

void Capturer::MaybeWrite() {
  if (job_->commands_done && job_->builtins_done && job_->ranks_done) {
    WriteBundle();
  }
}

void Capturer::OnBuiltinsDone() {
  if (!job_) {
    return;
  }
  job_->builtins_done = true;
  if (aborted_) {
    job_.reset();
    running_ = false;
    return;
  }
  MaybeWrite();
}

void Capturer::WriteBundle() {
  Job& job = *job_;
  if (job.ranks && !job.ranks->ranks.empty()) {
    job.builtins.push_back(std::move(job.ranks->result));
  }
  std::vector<collect::Artifact> artifacts;
  std::uint64_t estimate = 0;
  for (auto* results : {&job.builtins, &job.commands}) {
    for (const collect::CollectorResult& result : *results) {
      for (const collect::Artifact& artifact : result.artifacts) {
        estimate += SizeOf(artifact);
      }
    }
  }
  const bundle::RetentionPolicy policy{job.config.max_count, job.config.max_bytes,
                                       job.config.min_free_bytes, job.config.min_free_percent};
  std::error_code ignored;
  std::filesystem::create_directories(job.dir, ignored);
  bundle::RemovePartialBundles(job.dir);
  // Uncompressed sizes: an upper bound for what the bundle takes.
  job.deleted = bundle::MakeRoom(job.dir, policy, estimate);
  if (!bundle::Fits(job.dir, policy, estimate)) {
    job.reduced = true;
    job.reduced_why = "a full bundle (up to " + std::to_string(estimate >> 20) +
                      " MiB) would break min_free on " + job.dir +
                      ": logs and large outputs left out";
  }
  for (auto* results : {&job.builtins, &job.commands}) {
    for (collect::CollectorResult& result : *results) {
      for (collect::Artifact& artifact : result.artifacts) {
        if (job.reduced &&
            (!artifact.source_file.empty() || SizeOf(artifact) > kReducedMaxArtifact)) {
          continue;
        }
        artifacts.push_back(std::move(artifact));
      }
      result.artifacts.clear();
    }
  }
  // The worker owns the artifacts while it writes; the job stays put until it is done.
  env_.RunOnPool(
      [&bundle_job = job, artifacts = std::move(artifacts), created = env_.WallNow()]() mutable {
        std::vector<collect::CollectorResult> collectors = bundle_job.builtins;
        collectors.insert(collectors.end(), bundle_job.commands.begin(), bundle_job.commands.end());
        bundle::BundleRequest request;
        request.dir = bundle_job.dir;
        request.file_name = bundle_job.file_name;
        request.artifacts = std::move(artifacts);
        request.redactor = bundle_job.redactor.get();
        request.level = bundle_job.config.compression_level;
        request.make_manifest = [&](const bundle::BundleSummary& summary) {
          collect::RedactionCounts redactions = summary.redactions;
          redactions.Merge(bundle_job.env_redactions);
          return ManifestJson(bundle_job.request, collectors, summary, redactions,
                              bundle_job.reduced, bundle_job.reduced_why, bundle_job.host,
                              bundle_job.self_container, created,
                              bundle_job.ranks ? RanksJson(*bundle_job.ranks) : std::string());
        };
        request.make_report = [&](const std::string& manifest) {
          return BundleReport(manifest, request.artifacts, bundle_job.redactor.get());
        };
        bundle_job.written = bundle::WriteBundle(request);
      },
      [this] { OnWritten(); });
}

void Capturer::OnWritten() {
  std::unique_ptr<Job> job = std::move(job_);
  running_ = false;
  CaptureOutcome outcome;
  outcome.incident_id = job->request.incident.id;
  outcome.reduced = job->reduced;
  outcome.deleted = job->deleted;
  outcome.capture_seconds = std::chrono::duration<double>(env_.SteadyNow() - job->started).count();
  if (!job->request.incident.firings.empty()) {
    outcome.since_first_firing =
        std::chrono::duration<double>(env_.WallNow() - job->request.incident.firings.front().time)
            .count();
  } else if (const auto& peer = job->request.incident.peer) {
    // The peer's first firing line, on its clock: the job-wide latency (skew included).
    outcome.since_first_firing =
        std::chrono::duration<double>(env_.WallNow().time_since_epoch() -
                                      std::chrono::milliseconds(peer->opened_ms))
            .count();
  }
  outcome.host = job->host;
  if (job->ranks) {
    outcome.ranks_summary = job->ranks->diagnosis.Summary();
    outcome.suspects = job->ranks->diagnosis.suspects;
    outcome.devices_note = job->ranks->devices_note;
    outcome.ranks_seconds = job->ranks->seconds;
  }
  for (const collect::CollectorResult& result : job->commands) {
    if (result.status == collect::CollectorStatus::kTimedOut ||
        result.status == collect::CollectorStatus::kAbandoned) {
      outcome.timed_out.push_back(result.name);
    }
  }
  if (job->written) {
    outcome.path = job->written->path;
    outcome.bytes = job->written->bytes;
    if (job->reduced) {
      outcome.error = job->reduced_why;
    }
  } else {
    outcome.error = job->written.error().message;
  }
  if (!aborted_) {
    job->done(outcome);
    StartNext();
  }
}

}  // namespace trainwatch::capture
