#include "app/capture.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "app/incident_log.h"
#include "bundle/bundle_writer.h"
#include "collect/container.h"
#include "collect/file_collectors.h"
#include "collect/process_collectors.h"
#include "collect/system_facts.h"

namespace trainwatch::app {
namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

// In a reduced bundle (no room for a full one) only outputs this small stay.
constexpr std::uint64_t kReducedMaxArtifact = 64 * 1024;

std::string Hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) {
    return "unknown-host";
  }
  return name;
}

std::string SafeName(std::string text) {
  for (char& c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') {
      c = '-';
    }
  }
  return text.substr(0, 64);
}

std::string IsoTime(detect::WallTime time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    text.replace(at, from.size(), to);
    at += to.size();
  }
  return text;
}

// The firing lines with their context, as an engineer reads them first.
std::string FiringLines(const detect::Incident& incident) {
  std::string text;
  for (const detect::Firing& firing : incident.firings) {
    text += "== " + firing.event.rule_id + " at " + firing.stream +
            (firing.event.line ? ":" + std::to_string(firing.event.line) : "") + "\n";
    for (const std::string& line : firing.context) {
      text += "   " + line + "\n";
    }
    text += ">> " + firing.event.text + "\n";
    if (!firing.event.summary.empty()) {
      text += "   summary: " + firing.event.summary + "\n";
    }
    text += "\n";
  }
  return text;
}

// An artifact holding `content`; `redact` false for text redacted here already.
collect::Artifact TextArtifact(std::string path, std::string content, bool redact = true) {
  collect::Artifact artifact;
  artifact.path = std::move(path);
  artifact.content = std::move(content);
  artifact.redact = redact;
  return artifact;
}

// The command line and environment of processes that have exited since they were first seen
// writing a log (a crash's usual case), as read then.
collect::CollectorResult RememberedProcesses(const std::vector<source::WriterProcess>& processes,
                                             const collect::Redactor& redactor,
                                             collect::RedactionCounts& counts) {
  collect::CollectorResult result;
  result.name = "exited_processes";
  for (const source::WriterProcess& process : processes) {
    if (::kill(process.pid, 0) == 0 || errno == EPERM || process.cmdline.empty()) {
      continue;  // still there: the live collectors read it
    }
    const std::string folder =
        collect::ProcessFolder(collect::ProcessInfo{process.pid, process.comm, ""});
    std::string cmdline = process.cmdline;
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    redactor.RedactText(cmdline, counts);
    const std::string note = "# read while it was writing the log; it has exited since\n";
    result.artifacts.push_back(
        TextArtifact(folder + "/cmdline.txt", note + cmdline + "\n", /*redact=*/false));
    result.artifacts.push_back(TextArtifact(
        folder + "/environ.txt", note + redactor.RedactEnvironment(process.environ, counts),
        /*redact=*/false));
  }
  for (const collect::Artifact& artifact : result.artifacts) {
    result.bytes += artifact.content.size();
  }
  if (result.artifacts.empty()) {
    result.status = collect::CollectorStatus::kSkipped;
    result.detail = "no process exited since it was seen writing";
  }
  return result;
}

std::uint64_t SizeOf(const collect::Artifact& artifact) {
  return artifact.source_file.empty() ? artifact.content.size() : artifact.length;
}

}  // namespace

struct Capturer::Job {
  CaptureRequest request;
  Done done;
  Clock::time_point started = Clock::now();
  std::string host = Hostname();
  std::string self_container;
  std::vector<collect::CollectorResult> commands;
  std::vector<collect::CollectorResult> builtins;
  collect::RedactionCounts env_redactions;
  bool commands_done = false;
  bool builtins_done = false;
  bool reduced = false;
  std::string reduced_why;
  std::vector<std::string> deleted;
  std::string dir;
  std::string file_name;
  Result<bundle::BundleResult> written = Error{"not written"};
  uv_work_t work{};        // the in-process collectors
  uv_work_t write_work{};  // the bundle
  Capturer* owner = nullptr;
  std::shared_ptr<const collect::Redactor> redactor;
  config::CaptureConfig config;
};

Capturer::Capturer(uv_loop_t* loop, config::CaptureConfig config)
    : loop_(loop), config_(std::move(config)), runner_(loop) {}

Capturer::~Capturer() { Abort(); }

void Capturer::Reconfigure(config::CaptureConfig config) {
  config_ = std::move(config);  // the capture under way keeps its own copy
  redactor_.reset();            // rebuilt with the new rules at the next capture
}

void Capturer::Abort() {
  aborted_ = true;
  queue_.clear();
  runner_.Abort();
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
    Result<std::shared_ptr<const collect::Redactor>> made =
        collect::Redactor::Create({config_.redact_names, config_.redact_patterns});
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
    redactor_ = std::move(*made);
  }
  running_ = true;
  job_ = std::make_unique<Job>();
  job_->request = std::move(queue_.front().first);
  job_->done = std::move(queue_.front().second);
  queue_.pop_front();
  job_->owner = this;
  job_->config = config_;
  job_->redactor = redactor_;
  job_->dir = config_.bundles_dir;
  job_->file_name = BundleFileName(job_->request.incident, job_->host);
  // Training processes named by the config's pattern join the known writers.
  if (!config_.process_pattern.empty()) {
    Result<std::vector<collect::ProcessInfo>> found =
        collect::FindProcesses(config_.process_pattern);
    if (!found) {
      spdlog::warn("capture process_pattern: {}", found.error().message);
    } else {
      for (const collect::ProcessInfo& process : *found) {
        if (std::find(job_->request.pids.begin(), job_->request.pids.end(), process.pid) ==
            job_->request.pids.end()) {
          job_->request.pids.push_back(process.pid);
        }
      }
    }
  }
  if (job_->request.container.empty()) {
    for (int pid : job_->request.pids) {
      if (auto container = collect::ContainerOfProcess(std::to_string(pid))) {
        job_->request.container = container->id;
        break;
      }
    }
  }
  if (auto self = collect::ContainerOfProcess("self")) {
    job_->self_container = self->id;
  }
  std::error_code ignored;
  std::filesystem::create_directories(job_->dir, ignored);  // and disk usage can see it
  // The commands start now (they take longest); the in-process collectors run meanwhile.
  runner_.Run(CommandsFor(*job_), [this](std::vector<collect::CollectorResult> results) {
    OnCommandsDone(std::move(results));
  });
  job_->work.data = job_.get();
  uv_queue_work(
      loop_, &job_->work,
      [](uv_work_t* work) {
        Job& job = *static_cast<Job*>(work->data);
        const CaptureRequest& request = job.request;
        collect::CollectorResult incident;
        incident.name = "incident";
        incident.artifacts.push_back(
            TextArtifact("incident/incident.json", IncidentJson(request.incident) + "\n"));
        incident.artifacts.push_back(
            TextArtifact("incident/firing-lines.txt", FiringLines(request.incident)));
        job.builtins.push_back(std::move(incident));
        std::vector<pid_t> pids(request.pids.begin(), request.pids.end());
        job.builtins.push_back(
            collect::CollectEnvironment(pids, *job.redactor, job.env_redactions));
        job.builtins.push_back(
            RememberedProcesses(request.remembered, *job.redactor, job.env_redactions));
        job.builtins.push_back(collect::CollectProcesses(pids));
        job.builtins.push_back(collect::CollectSystemFacts());
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
      [](uv_work_t* work, int) {
        Job& job = *static_cast<Job*>(work->data);
        job.owner->OnBuiltinsDone();
      });
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
  if (job_->builtins_done) {
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
  if (job_->commands_done) {
    WriteBundle();
  }
}

void Capturer::WriteBundle() {
  Job& job = *job_;
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
  struct Payload {
    Job* job;
    std::vector<collect::Artifact> artifacts;
  };
  job.write_work.data = new Payload{&job, std::move(artifacts)};
  uv_queue_work(
      loop_, &job.write_work,
      [](uv_work_t* work) {
        auto* payload = static_cast<Payload*>(work->data);
        Job& bundle_job = *payload->job;
        std::vector<collect::CollectorResult> collectors = bundle_job.builtins;
        collectors.insert(collectors.end(), bundle_job.commands.begin(), bundle_job.commands.end());
        bundle::BundleRequest request;
        request.dir = bundle_job.dir;
        request.file_name = bundle_job.file_name;
        request.artifacts = std::move(payload->artifacts);
        request.redactor = bundle_job.redactor.get();
        request.level = bundle_job.config.compression_level;
        request.make_manifest = [&](const bundle::BundleSummary& summary) {
          collect::RedactionCounts redactions = summary.redactions;
          redactions.Merge(bundle_job.env_redactions);
          return ManifestJson(bundle_job.request, collectors, summary, redactions,
                              bundle_job.reduced, bundle_job.reduced_why, bundle_job.host,
                              bundle_job.self_container);
        };
        bundle_job.written = bundle::WriteBundle(request);
      },
      [](uv_work_t* work, int) {
        std::unique_ptr<Payload> payload(static_cast<Payload*>(work->data));
        payload->job->owner->OnWritten();
      });
}

void Capturer::OnWritten() {
  std::unique_ptr<Job> job = std::move(job_);
  running_ = false;
  CaptureOutcome outcome;
  outcome.incident_id = job->request.incident.id;
  outcome.reduced = job->reduced;
  outcome.deleted = job->deleted;
  outcome.capture_seconds = std::chrono::duration<double>(Clock::now() - job->started).count();
  if (!job->request.incident.firings.empty()) {
    outcome.since_first_firing =
        std::chrono::duration<double>(std::chrono::system_clock::now() -
                                      job->request.incident.firings.front().time)
            .count();
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

std::string LiteralDirOf(const std::string& pattern) {
  const std::size_t wildcard = pattern.find_first_of("*?[");
  const std::string literal = pattern.substr(0, wildcard);
  const std::size_t slash = literal.rfind('/');
  return slash == std::string::npos || slash == 0 ? "/" : literal.substr(0, slash);
}

std::string BundleFileName(const detect::Incident& incident, const std::string& host) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(incident.opened);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  const std::string rule = incident.rules.empty() ? "none" : incident.rules.front();
  return std::string(stamp) + "_" + SafeName(host) + "_" + SafeName(rule) + "_" +
         SafeName(incident.id) + ".tar.zst";
}

std::string ManifestJson(const CaptureRequest& request,
                         const std::vector<collect::CollectorResult>& collectors,
                         const bundle::BundleSummary& summary,
                         const collect::RedactionCounts& redactions, bool reduced,
                         const std::string& reduced_why, const std::string& host,
                         const std::string& container) {
  const detect::Incident& incident = request.incident;
  json firings = json::array();
  for (const detect::Firing& firing : incident.firings) {
    json entry = {{"rule", firing.event.rule_id},
                  {"kind", rules::RuleKindName(firing.event.kind)},
                  {"stream", firing.stream},
                  {"line", firing.event.line},
                  {"text", firing.event.text}};
    if (!firing.event.summary.empty()) {
      entry["summary"] = firing.event.summary;
    }
    firings.push_back(std::move(entry));
  }
  json collected = json::array();
  for (const collect::CollectorResult& result : collectors) {
    json entry = {
        {"name", result.name},           {"status", collect::CollectorStatusName(result.status)},
        {"exit_code", result.exit_code}, {"duration_seconds", result.duration_seconds},
        {"bytes", result.bytes},         {"truncated", result.truncated}};
    if (!result.detail.empty()) {
      entry["detail"] = result.detail;
    }
    collected.push_back(std::move(entry));
  }
  json files = json::array();
  for (const bundle::ArtifactSummary& artifact : summary.artifacts) {
    json entry = {{"path", artifact.path}, {"bytes", artifact.bytes}};
    if (artifact.truncated) {
      entry["truncated"] = true;
    }
    if (!artifact.problem.empty()) {
      entry["problem"] = artifact.problem;
    }
    files.push_back(std::move(entry));
  }
  json redacted = json::object();
  for (const auto& [rule, count] : redactions.by_rule) {
    redacted[rule] = count;
  }
  json manifest = {{"schema_version", 1},
                   {"trainwatch_version", TRAINWATCH_VERSION},
                   {"created", IsoTime(std::chrono::system_clock::now())},
                   {"host", host},
                   {"container", container.empty() ? json(nullptr) : json(container)},
                   {"incident",
                    {{"id", incident.id},
                     {"kind", rules::RuleKindName(incident.kind)},
                     {"summary", incident.summary},
                     {"rules", incident.rules},
                     {"opened", IsoTime(incident.opened)},
                     {"firings", std::move(firings)}}},
                   {"reduced", reduced},
                   {"collectors", std::move(collected)},
                   {"files", std::move(files)},
                   {"redactions", std::move(redacted)}};
  if (!request.reason.empty()) {
    manifest["incident"]["reason"] = request.reason;
  }
  if (reduced) {
    manifest["reduced_why"] = reduced_why;
  }
  if (!request.container.empty()) {
    manifest["job_container"] = request.container;
  }
  return manifest.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

bool WantedFor(const config::When& when, const detect::Incident& incident) {
  if (!incident.reason.empty()) {
    return when.manual;
  }
  switch (incident.kind) {
    case rules::RuleKind::kCrash:
      return when.crash;
    case rules::RuleKind::kHang:
      return when.hang;
    case rules::RuleKind::kDevice:
      return when.device;
    case rules::RuleKind::kWarning:
      return when.warning;
  }
  return false;
}

std::string IncidentKind(const detect::Incident& incident) {
  return incident.reason.empty() ? std::string(rules::RuleKindName(incident.kind)) : "manual";
}

}  // namespace trainwatch::app
