// Incidents (grouping, writing), the status for systemd and the control socket.
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include "app/daemon_internal.h"

namespace trainwatch::app::daemon_internal {

void Daemon::OnFirings(std::vector<detect::Firing>& firings, Stream* stream) {
  const Clock::time_point now = Clock::now();
  for (detect::Firing& firing : firings) {
    const std::string rule = firing.event.rule_id;
    ++counters_.firings_by_rule[rule];
    const std::string where =
        firing.stream + (firing.event.line ? ":" + std::to_string(firing.event.line) : "");
    const std::string what =
        firing.event.summary.empty() ? firing.event.text : firing.event.summary;
    if (stream != nullptr) {
      // Held before Add moves the firing; released when the incident is written (or at
      // once, below, when it joined nothing).
      stream->HoldForIncident(firing);
    }
    switch (incidents_.Add(std::move(firing), now)) {
      case detect::IncidentBuilder::Disposition::kOpened:
        unlogged_.erase(rule);
        spdlog::warn("{} fired at {}: {} (incident {} opened)", rule, where, what,
                     incidents_.open()->id);
        break;
      case detect::IncidentBuilder::Disposition::kJoined:
        unlogged_.erase(rule);
        // The incident records the first firings; a flood joining it is counted there.
        if (incidents_.open()->more_firings == 0) {
          spdlog::info("{} fired at {}: {} (joins incident {})", rule, where, what,
                       incidents_.open()->id);
        }
        break;
      case detect::IncidentBuilder::Disposition::kCoolingDown:
        // Never a log line per log line: the first of a run is logged, the rest counted.
        if (unlogged_[rule]++ == 0) {
          spdlog::info(
              "{} fired at {}: {} (in cooldown, no new incident; further firings are "
              "counted in `trainwatch status`)",
              rule, where, what);
        }
        ++quiet_firings_[rule];
        break;
      case detect::IncidentBuilder::Disposition::kWarningAlone:
        if (unlogged_[rule]++ == 0) {
          spdlog::info("{} (warning) at {}: {} (further ones are counted in `trainwatch status`)",
                       rule, where, what);
        }
        ++quiet_firings_[rule];
        break;
    }
  }
  if (!incidents_.open() && stream != nullptr) {
    stream->ReleaseIncidentHold();
  }
  ScheduleSettle();
}

void Daemon::ScheduleSettle() {
  const std::optional<Clock::time_point> at = incidents_.SettlesAt();
  if (!at) {
    return;
  }
  const auto delay = std::max<Clock::duration>(Clock::duration::zero(), *at - Clock::now());
  uv_timer_start(
      settle_.get(),
      [](uv_timer_t* timer) {
        if (auto* self = static_cast<Daemon*>(timer->data)) {
          self->WriteSettled();
        }
      },
      static_cast<std::uint64_t>(std::chrono::ceil<std::chrono::milliseconds>(delay).count()), 0);
}

void Daemon::WriteSettled() {
  if (std::optional<detect::Incident> incident =
          incidents_.TakeSettled(Clock::now(), std::chrono::system_clock::now())) {
    WriteIncident(*incident, {}, nullptr);
  } else {
    ScheduleSettle();
  }
  StopIfWrapDone();
}

void Daemon::StopIfWrapDone() {
  if (!stop_after_settle_) {
    return;
  }
  if (!incidents_.open() && captures_running_ == 0 && (!hooks_ || hooks_->idle())) {
    Stop(exit_code_);  // wrap: the command ended and its incident, bundle and hooks are done
  } else if (!incidents_.open() && captures_running_ == 0 && !said_waiting_) {
    said_waiting_ = true;
    spdlog::info("the command ended; waiting for the on_incident hooks before exiting");
  }
}

void Daemon::WriteIncident(detect::Incident& incident, const CaptureOptions& options,
                           CaptureDone then) {
  if (Status written = incident_log_->Append(incident); !written) {
    // The incident still counts; the next one may find space again.
    spdlog::error("incident {} could not be recorded: {}", incident.id, written.error().message);
  } else {
    spdlog::warn("incident {}: {} — {} ({} firing lines, rules: {})", incident.id,
                 rules::RuleKindName(incident.kind), incident.summary,
                 incident.firings.size() + incident.more_firings,
                 fmt::format("{}", fmt::join(incident.rules, ", ")));
  }
  ++incidents_written_;
  ++counters_.incidents_by_kind[IncidentKind(incident)];
  last_incident_ = incident.id;
  ForEachStream([](SourceState&, Stream& stream, TailedFile*) { stream.ReleaseIncidentHold(); });
  SaveStateSoon();
  UpdateStatus();
  StartCapture(incident, options, std::move(then));
}

void Daemon::StartCapture(const detect::Incident& incident, const CaptureOptions& options,
                          CaptureDone then) {
  if (!capturer_ || !capturer_->config().enabled ||
      (incident.kind == rules::RuleKind::kWarning && incident.reason.empty())) {
    const CaptureOutcome outcome{incident.id, "", 0, false,
                                 capturer_ && capturer_->config().enabled
                                     ? "no bundle for a warning"
                                     : "capture is disabled in the config"};
    RunHooks(incident, outcome);
    if (then) {
      then(outcome);
    }
    return;
  }
  CaptureRequest request;
  request.incident = incident;
  request.reason = incident.reason;
  request.container = options.container;
  request.extra_logs = options.extra_logs;
  request.extra_paths = options.extra_paths;
  std::set<int> pids;
  ForEachStream([&](SourceState& source, Stream& stream, TailedFile* file) {
    if (file != nullptr) {
      request.log_files.push_back(file->tail.path());
    }
    for (const source::WriterProcess& writer : stream.writers()) {
      pids.insert(writer.pid);
      request.remembered.push_back(writer);
    }
    (void)source;
  });
  for (const detect::Firing& firing : incident.firings) {
    for (const source::WriterProcess& writer : firing.writers) {
      pids.insert(writer.pid);  // gone by now, perhaps, but named in the manifest
      request.remembered.push_back(writer);
    }
  }
  request.pids.assign(pids.begin(), pids.end());
  for (auto& source : sources_) {
    for (const std::string& pattern : source->config.paths) {
      request.watched_dirs.push_back(LiteralDirOf(pattern));
    }
  }
  ++captures_running_;
  detect::Incident facts = incident;  // for the hooks: what they are told, not every line
  facts.firings.clear();
  capturer_->Capture(std::move(request), [this, then, facts](const CaptureOutcome& outcome) {
    --captures_running_;
    OnCaptured(outcome);
    RunHooks(facts, outcome);
    if (then) {
      then(outcome);
    }
    StopIfWrapDone();
  });
}

void Daemon::RunHooks(const detect::Incident& incident, const CaptureOutcome& outcome) {
  if (!stopping_) {
    hooks_->Run(incident, outcome.path, outcome.error, incident_log_->path());
  }
}

void Daemon::OnCaptured(const CaptureOutcome& outcome) {
  if (!outcome.path.empty()) {
    ++counters_.bundles_written;
    counters_.bundle_bytes += outcome.bytes;
    spdlog::warn("incident {}: bundle {} ({} KiB{}, {:.1f} s after the first firing line)",
                 outcome.incident_id, outcome.path, outcome.bytes / 1024,
                 outcome.reduced ? ", reduced: " + outcome.error : "", outcome.since_first_firing);
  } else {
    ++counters_.bundles_failed;
    spdlog::error("incident {}: no bundle: {}", outcome.incident_id, outcome.error);
  }
  for (const std::string& deleted : outcome.deleted) {
    ++counters_.bundles_deleted;
    spdlog::info("retention: removed {}", deleted);
  }
  for (const std::string& collector : outcome.timed_out) {
    // "py-spy-4242" (a command run once per process) counts as "py-spy": one series per
    // configured collector, not per process that ever hung.
    std::string name = collector;
    for (const config::CommandConfig& command : setup_.config.capture.commands) {
      const std::string prefix = command.name + "-";
      if (collector.size() > prefix.size() && collector.compare(0, prefix.size(), prefix) == 0 &&
          std::all_of(collector.begin() + static_cast<std::ptrdiff_t>(prefix.size()),
                      collector.end(), [](unsigned char c) { return std::isdigit(c); })) {
        name = command.name;
      }
    }
    ++counters_.collector_timeouts[name];
  }
  if (!outcome.timed_out.empty()) {
    spdlog::warn("incident {}: collectors killed at their deadline: {}", outcome.incident_id,
                 fmt::format("{}", fmt::join(outcome.timed_out, ", ")));
  }
  if (Status recorded = incident_log_->AppendBundle(outcome); !recorded) {
    spdlog::error("cannot record the bundle of incident {}: {}", outcome.incident_id,
                  recorded.error().message);
  }
}

void Daemon::UpdateStatus() {
  std::size_t files = 0;
  for (auto& source : sources_) {
    files += source->tails ? source->tails->files().size() : 0;
  }
  std::string status = "watching " + std::to_string(files) + " files in " +
                       std::to_string(sources_.size()) + " sources; " +
                       std::to_string(incidents_written_) + " incidents";
  if (!last_incident_.empty()) {
    status += " (last " + last_incident_ + ")";
  }
  if (status != last_status_) {
    sd_notify(0, ("STATUS=" + status).c_str());
    last_status_ = status;
  }
}

json Daemon::StatusJson() const {
  const Clock::time_point now = Clock::now();
  json sources = json::array();
  auto stream_json = [&](const Stream& stream) {
    json bars = json::array();
    for (const auto& [key, bar] : stream.progress().bars()) {
      json entry = {
          {"label", bar.label},
          {"count", bar.count},
          {"complete", bar.complete},
          {"advanced", bar.advanced},
          {"seconds_since_advance",
           std::chrono::duration_cast<std::chrono::seconds>(now - bar.last_advance).count()}};
      if (bar.total) {
        entry["total"] = *bar.total;
      }
      bars.push_back(std::move(entry));
    }
    return json{
        {"name", stream.identity().name},
        {"lines", stream.lines()},
        {"bytes", stream.bytes()},
        {"job_ended", stream.progress().ended()},
        {"seconds_since_output",
         std::chrono::duration_cast<std::chrono::seconds>(now - stream.last_output()).count()},
        {"bars", std::move(bars)}};
  };
  auto source_json = [&](const SourceState& source) {
    json files = json::array();
    json streams = json::array();
    if (source.tails) {
      for (const auto& [id, file] : source.tails->files()) {
        json entry = stream_json(*file->stream);
        entry["path"] = file->tail.path();
        entry["offset"] = file->tail.position().offset;
        entry["durable_offset"] = file->stream->Durable(file->tail.position()).offset;
        json writers = json::array();
        for (const source::WriterProcess& writer : file->stream->writers()) {
          writers.push_back({{"pid", writer.pid}, {"comm", writer.comm}});
        }
        entry["writers"] = std::move(writers);
        if (file->gone_since) {
          entry["gone"] = true;
        }
        files.push_back(std::move(entry));
      }
    }
    if (source.kmsg_stream) {
      streams.push_back(stream_json(*source.kmsg_stream));
    }
    for (const auto& stream : source.wrap_streams) {
      streams.push_back(stream_json(*stream));
    }
    json entry = {{"name", source.config.name},   {"tags", source.config.tags},
                  {"paths", source.config.paths}, {"lines", source.lines},
                  {"bytes", source.bytes},        {"files", std::move(files)},
                  {"streams", std::move(streams)}};
    if (source.config.kmsg) {
      entry["kmsg"] = source.kmsg && source.kmsg->running();
    }
    if (source.tails && !source.tails->parked_copies().empty()) {
      entry["parked_copies"] = source.tails->parked_copies();
    }
    return entry;
  };
  for (const auto& source : sources_) {
    sources.push_back(source_json(*source));
  }
  if (wrap_source_) {
    sources.push_back(source_json(*wrap_source_));
  }
  json status = {
      {"version", TRAINWATCH_VERSION},
      {"pid", ::getpid()},
      {"config", setup_.config.file},
      {"state_dir", setup_.config.state_dir},
      {"uptime_seconds", std::chrono::duration_cast<std::chrono::seconds>(now - started_).count()},
      {"rules", setup_.rules.size()},
      {"incidents_written", incidents_written_},
      {"incidents_file", incident_log_->path()},
      {"sources", std::move(sources)}};
  if (!last_incident_.empty()) {
    status["last_incident"] = last_incident_;
  }
  if (!quiet_firings_.empty()) {
    status["firings_without_incident"] = quiet_firings_;  // warnings, and rules in cooldown
  }
  if (const auto& open = incidents_.open()) {
    status["open_incident"] = {{"id", open->id},
                               {"kind", rules::RuleKindName(open->kind)},
                               {"summary", open->summary},
                               {"rules", open->rules}};
  }
  return status;
}

void Daemon::HandleControl(const std::string& request_text, ControlServer::Reply reply) {
  const json request = json::parse(request_text, nullptr, /*allow_exceptions=*/false);
  if (!request.is_object() || !request.contains("command")) {
    reply(json{{"error", "bad request: expected {\"command\": ...}"}}.dump());
    return;
  }
  const std::string command = request.value("command", "");
  if (command == "status") {
    reply(StatusJson().dump(-1, ' ', false, json::error_handler_t::replace));
    return;
  }
  if (command == "snapshot") {
    detect::Incident incident = incidents_.Manual(request.value("reason", "manual snapshot"),
                                                  std::chrono::system_clock::now());
    CaptureOptions options;
    options.container = request.value("container", "");
    for (const auto& path : request.value("copy", json::array())) {
      options.extra_paths.push_back(path.get<std::string>());
    }
    for (const auto& path : request.value("log", json::array())) {
      options.extra_logs.push_back(path.get<std::string>());
    }
    const std::string id = incident.id;
    const std::string file = incident_log_->path();
    // The answer waits for the bundle: the caller wants its path.
    WriteIncident(incident, options, [reply, id, file](const CaptureOutcome& outcome) {
      json answer = {{"incident", id}, {"incidents_file", file}};
      if (!outcome.path.empty()) {
        answer["bundle"] = outcome.path;
        answer["bytes"] = outcome.bytes;
      }
      if (!outcome.error.empty()) {
        answer["bundle_error"] = outcome.error;
      }
      reply(answer.dump());
    });
    return;
  }
  reply(json{{"error", "unknown command: " + command}}.dump());
}

}  // namespace trainwatch::app::daemon_internal
