#include "app/daemon.h"

#include <fcntl.h>
#include <malloc.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>

#include "app/daemon_internal.h"
#include "app/rule_paths.h"
#include "rules/rule_loader.h"

namespace trainwatch::app {
namespace daemon_internal {

Result<Setup> LoadSetup(const std::string& config_path) {
  config::ConfigLoad load = config::LoadDaemonConfig(config_path, config::ProcessEnv());
  std::string problems;
  for (const Diagnostic& error : load.errors) {
    problems += FormatDiagnostic(error) + "\n";
  }
  if (!load.config) {
    return Error{problems};
  }
  Setup setup{std::move(*load.config), {}};
  const std::vector<std::string> rule_paths =
      setup.config.rule_paths.empty() ? DefaultRulePaths() : setup.config.rule_paths;
  rules::LoadedRules loaded = rules::LoadRulePaths(rule_paths);
  for (const Diagnostic& error : loaded.errors) {
    problems += FormatDiagnostic(error) + "\n";
  }
  if (!problems.empty()) {
    return Error{problems};
  }
  setup.rules = std::move(loaded.rules);
  return setup;
}

void Daemon::SaveStateSoon() {
  if (stopping_ || uv_is_active(save_timer_.base())) {
    return;
  }
  uv_timer_start(
      save_timer_.get(),
      [](uv_timer_t* timer) {
        if (auto* self = static_cast<Daemon*>(timer->data)) {
          self->SaveState();
        }
      },
      kStateSaveDelay.count(), 0);
}

void Daemon::SaveState() {
  if (guest_) {
    return;  // the offsets belong to the daemon that holds the state_dir
  }
  source::TailState state;
  for (auto& source : sources_) {
    if (source->tails) {
      source->tails->SaveTo(state.tails);
    }
  }
  // Entries of sources no longer configured are dropped here, as is right: their files are
  // no longer followed.
  if (Status saved = source::SaveTailState(setup_.config.state_dir + "/offsets.json", state);
      !saved) {
    spdlog::error("cannot save offsets: {}", saved.error().message);
  }
}

Status Daemon::Apply(Setup setup, bool initial) {
  std::vector<Diagnostic> notes;
  // Compiled rule databases are kept here: later starts load them instead of compiling.
  const std::string cache_dir =
      (initial ? setup.config.state_dir : setup_.config.state_dir) + "/cache";
  std::vector<std::unique_ptr<SourceState>> fresh;
  for (const config::SourceConfig& config : setup.config.sources) {
    Result<std::unique_ptr<SourceState>> source = MakeSource(config, setup.rules, cache_dir, notes);
    if (!source) {
      return source.error();
    }
    fresh.push_back(std::move(*source));
  }
  // Operators' redaction patterns are checked now; the redactor itself is built at the first
  // capture (it is heavy, and a healthy daemon may never need it).
  if (!setup.config.capture.redact_names.empty() || !setup.config.capture.redact_patterns.empty()) {
    Result<std::shared_ptr<const collect::Redactor>> redactor = collect::Redactor::Create(
        {setup.config.capture.redact_names, setup.config.capture.redact_patterns});
    if (!redactor) {
      return Error{setup.config.file + ": capture redact: " + redactor.error().message};
    }
  }
  std::unique_ptr<SourceState> wrap_source;
  if (child_ || !options_.wrap.empty()) {
    config::SourceConfig wrap_config;
    wrap_config.name = "wrap";
    wrap_config.tags = {"train"};
    Result<std::unique_ptr<SourceState>> source =
        MakeSource(wrap_config, setup.rules, cache_dir, notes);
    if (!source) {
      return source.error();
    }
    wrap_source = std::move(*source);
  }
  for (const Diagnostic& note : notes) {
    spdlog::info("{}", FormatDiagnostic(note));
  }
  if (!initial && setup.config.state_dir != setup_.config.state_dir) {
    spdlog::warn("state_dir changed from {} to {}: takes effect at the next start",
                 setup_.config.state_dir, setup.config.state_dir);
    setup.config.state_dir = setup_.config.state_dir;
  }
  // Everything compiled: from here on the new setup replaces the old without failing.
  // Sources that keep their name keep their files, offsets and detector state.
  std::map<std::string, std::unique_ptr<SourceState>> old;
  for (auto& source : sources_) {
    old.emplace(source->config.name, std::move(source));
  }
  sources_.clear();
  if (!initial && setup.config.capture.bundles_dir != setup_.config.capture.bundles_dir) {
    spdlog::info("bundles now go to {}", setup.config.capture.bundles_dir);
  }
  setup_ = std::move(setup);
  if (capturer_) {
    capturer_->Reconfigure(setup_.config.capture);
  } else {
    capturer_ = std::make_unique<Capturer>(&loop_, setup_.config.capture);
  }
  if (!hooks_) {
    hooks_ = std::make_unique<HookRunner>(&loop_);
    hooks_->OnIdle([this] { StopIfWrapDone(); });
  }
  hooks_->Configure(setup_.config.on_incident);
  ++setups_applied_;
  ReconfigureMetrics();
  incidents_.set_settings({setup_.config.incident.settle, setup_.config.incident.cooldown});
  for (auto& source : fresh) {
    auto kept = old.find(source->config.name);
    if (kept != old.end() && kept->second->config.kmsg == source->config.kmsg) {
      SourceState& previous = *kept->second;
      previous.line_rules = source->line_rules;
      previous.progress_rules = source->progress_rules;
      previous.silence_rules = source->silence_rules;
      previous.exit_rules = source->exit_rules;
      const bool paths_changed = previous.config.paths != source->config.paths;
      previous.config = source->config;
      SwapRules(previous);
      if (previous.tails && paths_changed) {
        previous.tails->Reconfigure(previous.config, setup_.config.watch);
      }
      sources_.push_back(std::move(kept->second));
      old.erase(kept);
      continue;
    }
    sources_.push_back(std::move(source));
    StartSource(*sources_.back());
  }
  for (auto& [name, source] : old) {
    spdlog::info("source {} removed", name);
    if (source->tails) {
      source->tails->Close();
    }
  }
  if (wrap_source) {
    if (wrap_source_) {
      wrap_source_->line_rules = wrap_source->line_rules;
      wrap_source_->progress_rules = wrap_source->progress_rules;
      wrap_source_->silence_rules = wrap_source->silence_rules;
      wrap_source_->exit_rules = wrap_source->exit_rules;
      SwapRules(*wrap_source_);
    } else {
      wrap_source_ = std::move(wrap_source);
    }
  }
  return Status::Ok();
}

void Daemon::SwapRules(SourceState& source) {
  auto swap = [&](Stream& stream) {
    if (Status swapped = stream.SetRules(source.line_rules); !swapped) {
      spdlog::error("source {}: {}: {}", source.config.name, stream.identity().name,
                    swapped.error().message);
    }
  };
  if (source.tails) {
    for (auto& [id, file] : source.tails->files()) {
      swap(*file->stream);
    }
  }
  if (source.kmsg_stream) {
    swap(*source.kmsg_stream);
  }
  for (auto& stream : source.wrap_streams) {
    swap(*stream);
  }
}

void Daemon::Reload() {
  spdlog::info("SIGHUP: reloading {}", setup_.config.file);
  Result<Setup> setup = LoadSetup(setup_.config.file);
  if (!setup) {
    spdlog::error("reload rejected, still running on the previous config and rules:\n{}",
                  setup.error().message);
    return;
  }
  const std::size_t rules = setup->rules.size();
  if (guest_) {
    setup->config.sources.clear();
  }
  if (Status applied = Apply(std::move(*setup), /*initial=*/false); !applied) {
    spdlog::error("reload rejected, still running on the previous config and rules: {}",
                  applied.error().message);
    return;
  }
  spdlog::info("reloaded: {} sources, {} rules", sources_.size(), rules);
  malloc_trim(0);
  UpdateStatus();
}

void Daemon::Stop(int exit_code) {
  if (stopping_) {
    return;
  }
  stopping_ = true;
  exit_code_ = exit_code;
  SaveState();
  if (capturer_) {
    capturer_->Abort();  // kept: a worker may still be finishing with it
  }
  if (hooks_) {
    hooks_->Abort();  // logs and counts what it kills or leaves unrun
  }
  WriteMetrics();  // the final counts, before the sources go
  sd_notify(0, "STOPPING=1");
  for (auto& source : sources_) {
    if (source->tails) {
      source->tails->Close();
    }
    if (source->kmsg) {
      source->kmsg->Stop();
    }
  }
  sources_.clear();
  wrap_source_.reset();
  control_.Stop();
  tick_.Reset();
  settle_.Reset();
  traceback_timer_.Reset();
  save_timer_.Reset();
  watchdog_.Reset();
  writer_soon_.Reset();
  signals_.clear();
  child_.reset();
}

int Daemon::Run() {
  const std::string config_path =
      options_.config_path.empty() ? DefaultConfigPath() : options_.config_path;
  Result<Setup> setup = LoadSetup(config_path);
  if (!setup) {
    spdlog::error("cannot start:\n{}", setup.error().message);
    return 2;
  }
  const std::string state_dir = setup->config.state_dir;
  std::error_code made;
  std::filesystem::create_directories(state_dir, made);
  if (made) {
    spdlog::error("cannot start: state_dir {}: {}", state_dir, made.message());
    return 2;
  }
  // One daemon per state_dir: two would fight over offsets and the control socket.
  state_lock_ = UniqueFd(::open((state_dir + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (state_lock_.get() < 0 || ::flock(state_lock_.get(), LOCK_EX | LOCK_NB) != 0) {
    if (options_.wrap.empty()) {
      spdlog::error("cannot start: another trainwatch daemon uses state_dir {} ({})", state_dir,
                    std::strerror(errno));
      return 2;
    }
    // The job must run anyway. That daemon watches the configured sources; this wrap watches
    // only its command, and appends its incidents to the same log (whole-line appends).
    spdlog::info("a trainwatch daemon already watches state_dir {}: watching only the command",
                 state_dir);
    guest_ = true;
    setup->config.sources.clear();
  }
  Result<source::LoadedTailState> state = source::LoadTailState(state_dir + "/offsets.json");
  if (!state) {
    spdlog::error("{}; starting without saved offsets", state.error().message);
  } else {
    saved_ = std::move(state->state.tails);
    first_start_ = state->first_start;
  }
  incident_log_ = std::make_unique<IncidentLog>(state_dir + "/incidents.jsonl");
  if (Result<IncidentHistory> history = incident_log_->ReadHistory(); history) {
    history_ = std::move(*history);
  } else {
    spdlog::error("{}; earlier incidents are not taken into account", history.error().message);
  }
  const auto wall_now = std::chrono::system_clock::now();
  for (const auto& [rule, opened] : history_.rule_last_opened) {
    incidents_.RestoreCooldown(rule, Clock::now() - (wall_now - opened));
  }
  if (history_.incidents > 0) {
    spdlog::info("{} earlier incidents in {}; their cooldowns and fired lines carry on",
                 history_.incidents, incident_log_->path());
  }

  uv_loop_init(&loop_);
  int status = 0;
  for (auto* timer :
       {&tick_, &settle_, &traceback_timer_, &save_timer_, &watchdog_, &writer_soon_}) {
    *timer = UvHandle<uv_timer_t>::Make(&loop_, status, uv_timer_init);
    (*timer)->data = this;
  }
  for (int signum : {SIGHUP, SIGTERM, SIGINT}) {
    auto handle = UvHandle<uv_signal_t>::Make(&loop_, status, uv_signal_init);
    handle->data = this;
    uv_signal_start(
        handle.get(),
        [](uv_signal_t* signal, int signum) {
          auto* self = static_cast<Daemon*>(signal->data);
          if (self == nullptr) {
            return;
          }
          if (signum == SIGHUP) {
            self->Reload();
          } else if (self->child_ && self->child_->running()) {
            // At a terminal, Ctrl-C reaches the command directly (same process group): passing
            // it on would interrupt its own handling of the first.
            if (signum != SIGINT || !::isatty(STDIN_FILENO)) {
              spdlog::info("{}: passing it to the command", strsignal(signum));
              self->child_->Signal(signum);
            }
          } else {
            spdlog::info("{}: stopping", strsignal(signum));
            // wrap, after its command ended (waiting for the incident, bundle or hooks): the
            // command's status stands, or a crashed job would look like a success.
            self->Stop(self->stop_after_settle_ ? self->exit_code_ : 0);
          }
        },
        signum);
    signals_.push_back(std::move(handle));
  }
  ::signal(SIGPIPE, SIG_IGN);  // a client that hangs up on the control socket is no reason to die

  if (!options_.wrap.empty()) {
    child_ = std::make_unique<WrappedChild>();
  }
  if (Status applied = Apply(std::move(*setup), /*initial=*/true); !applied) {
    spdlog::error("cannot start: {}", applied.error().message);
    Stop(2);
  } else if (guest_) {
    // No control socket: the daemon of this state_dir answers there.
  } else if (Status listening =
                 control_.Start(&loop_, state_dir + "/control.sock",
                                [this](const std::string& request, ControlServer::Reply reply) {
                                  HandleControl(request, std::move(reply));
                                });
             !listening) {
    spdlog::error("cannot start the control socket: {}", listening.error().message);
    Stop(2);
  }
  if (!stopping_ && child_) {
    StartWrap();
  }
  if (!stopping_) {
    uv_timer_start(
        tick_.get(),
        [](uv_timer_t* timer) {
          if (auto* self = static_cast<Daemon*>(timer->data)) {
            self->Tick();
          }
        },
        std::chrono::milliseconds(kTick).count(), std::chrono::milliseconds(kTick).count());
    std::uint64_t watchdog_usec = 0;
    if (sd_watchdog_enabled(0, &watchdog_usec) > 0 && watchdog_usec > 0) {
      // Pinged from the loop itself: a loop that is stuck stops pinging, and systemd restarts
      // a daemon that would otherwise miss every failure from then on.
      const std::uint64_t every = std::max<std::uint64_t>(1, watchdog_usec / 2000);
      uv_timer_start(
          watchdog_.get(), [](uv_timer_t*) { sd_notify(0, "WATCHDOG=1"); }, every, every);
    }
    StartWriterScan();
    UpdateStatus();
    // Compiling the rules (Hyperscan, RE2) used and freed megabytes that malloc keeps: give
    // them back, a watcher's footprint is what stays.
    malloc_trim(0);
    MaybeWriteMetrics(Clock::now());  // the textfile exists once the daemon is ready
    sd_notify(0, "READY=1");
    spdlog::info("watching: {} sources, {} rules; incidents go to {}", sources_.size(),
                 setup_.rules.size(), incident_log_->path());
  }
  uv_run(&loop_, UV_RUN_DEFAULT);
  const int closed = uv_loop_close(&loop_);
  if (closed != 0) {
    spdlog::error("loop did not close cleanly: {}", uv_strerror(closed));
    return exit_code_ == 0 ? 1 : exit_code_;
  }
  return exit_code_;
}

}  // namespace daemon_internal

using daemon_internal::Daemon;
using daemon_internal::LoadSetup;
using daemon_internal::Setup;

std::string DefaultConfigPath() {
  if (const char* path = std::getenv("TRAINWATCH_CONFIG"); path != nullptr && *path != '\0') {
    return path;
  }
  if (std::filesystem::exists("/etc/trainwatch/trainwatch.yaml")) {
    return "/etc/trainwatch/trainwatch.yaml";
  }
  return ShippedConfigPath();
}

int RunDaemon(const DaemonOptions& options) {
  Daemon daemon(options);
  return daemon.Run();
}

int CheckConfig(const std::string& config_path) {
  Result<Setup> setup = LoadSetup(config_path);
  if (!setup) {
    std::fputs(setup.error().message.c_str(), stderr);
    return 2;
  }
  std::vector<Diagnostic> notes;
  for (const config::SourceConfig& source : setup->config.sources) {
    Result<std::shared_ptr<const rules::CompiledRules>> compiled =
        rules::CompiledRules::Build(setup->rules, source.tags, &notes);
    if (!compiled) {
      std::fprintf(stderr, "%s: source %s: %s\n", config_path.c_str(), source.name.c_str(),
                   compiled.error().message.c_str());
      return 2;
    }
  }
  Result<std::shared_ptr<const collect::Redactor>> redactor = collect::Redactor::Create(
      {setup->config.capture.redact_names, setup->config.capture.redact_patterns});
  if (!redactor) {
    std::fprintf(stderr, "%s: capture redact: %s\n", config_path.c_str(),
                 redactor.error().message.c_str());
    return 2;
  }
  std::printf("%s: ok: %zu sources, %zu rules, state in %s\n", config_path.c_str(),
              setup->config.sources.size(), setup->rules.size(), setup->config.state_dir.c_str());
  return 0;
}

}  // namespace trainwatch::app
