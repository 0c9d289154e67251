#include "app/daemon.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>
#include <uv.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>

#include "app/daemon_host.h"
#include "app/daemon_sinks.h"
#include "app/running_daemon.h"
#include "collect/redactor.h"
#include "collect/stray_processes.h"
#include "collect/wrap_python_hook.h"
#include "config/shipped_paths.h"
#include "core/idle_memory.h"
#include "core/open_file_limit.h"
#include "core/posix_env.h"
#include "core/trusted_path.h"
#include "core/unique_fd.h"
#include "diagnose/stack_rules.h"
#include "ops/control_server.h"
#include "ops/metrics_textfile.h"
#include "ops/service_notify.h"
#include "ops/state_dir_guard.h"
#include "ops/status_json.h"
#include "ops/verdict_exit_code.h"
#include "rules/configured_rules.h"
#include "source/wrapped_child.h"
#include "watch/sources.h"

namespace trainwatch::app {
namespace {

constexpr auto kTick = std::chrono::seconds(1);
constexpr auto kStateSaveDelay = std::chrono::milliseconds(100);

}  // namespace

void Daemon::SaveState(bool now) {
  if (guest_ || !sources_) {
    return;  // the offsets belong to the daemon that holds the state_dir
  }
  source::TailState state;
  sources_->SaveTo(state);
  const std::string path = setup_.config.state_dir + "/offsets.json";
  if (!offsets_writer_ || offsets_writer_->path() != path) {
    offsets_writer_ =
        std::make_unique<LatestFileWriter>(*env_, path, 0600, [](const Status& saved) {
          if (!saved) {
            spdlog::error("cannot save offsets: {}", saved.error().message);
          }
        });
  }
  // Entries of sources no longer configured are dropped here, as is right: their files are
  // no longer followed.
  std::string text = source::TailStateText(state);
  if (!now) {
    offsets_writer_->Write(std::move(text));
  } else if (Status saved = offsets_writer_->WriteNow(text); !saved) {
    spdlog::error("cannot save offsets: {}", saved.error().message);
  }
}

Status Daemon::Apply(rules::ConfiguredRules setup, bool initial,
                     Result<watch::PreparedSources> prepared,
                     const std::vector<Diagnostic>& notes) {
  if (!prepared) {
    return prepared.error();
  }
  // Operators' redaction patterns are checked now (RE2 alone: whether they compile and match
  // something, without building the prefilter, which was compiled in this process at every
  // start and reload only to be thrown away); the redactor itself is built at the first
  // capture (it is heavy, and a healthy daemon may never need it).
  if (!setup.config.capture.redact_names.empty() || !setup.config.capture.redact_patterns.empty()) {
    Result<std::shared_ptr<const collect::Redactor>> redactor = collect::Redactor::Create(
        {setup.config.capture.redact_names, setup.config.capture.redact_patterns},
        collect::RedactorMatching::kRe2Only);
    if (!redactor) {
      return Error{setup.config.file + ": capture redact: " + redactor.error().message};
    }
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
  setup_ = std::move(setup);
  incidents_->Configure(setup_.config);
  incidents_->SetStackRules(diagnose::CompileStackRules(setup_.rules));
  incidents_->SetResolvingRules(incident::ResolvingLines(setup_.rules));
  ++setups_applied_;
  metrics_.Configure(!guest_ && setup_.config.metrics.enabled, setup_.config.metrics.path,
                     setup_.config.metrics.interval);
  sources_->Apply(std::move(*prepared), setup_.config);
  return Status::Ok();
}

void Daemon::GuardStateDir() {
  if (!state_guard_ || stopping_) {
    return;
  }
  std::string why;
  switch (state_guard_->Check(&why)) {
    case ops::StateDirGuard::Verdict::kIntact:
      state_dir_trouble_.clear();
      return;
    case ops::StateDirGuard::Verdict::kRestored:
      state_dir_trouble_.clear();
      spdlog::error(
          "state_dir {} (or its lock) was deleted while running: recreated it and "
          "took the lock again; control socket, offsets and incident log follow",
          state_guard_->dir());
      host_->StopControl(/*remove_socket=*/true);
      if (Status listening = ListenControl(); !listening) {
        spdlog::error("cannot start the control socket again: {}", listening.error().message);
      }
      SaveState();
      return;
    case ops::StateDirGuard::Verdict::kTakenByAnother:
      spdlog::critical(
          "state_dir {} was deleted while running and another trainwatch daemon "
          "has taken it since ({}): two would fire every line twice, so this one "
          "stops writing there and exits",
          state_guard_->dir(), why);
      state_guard_.reset();
      state_dir_taken_ = true;
      guest_ = true;  // the offsets and metrics are the other daemon's now
      if (offsets_writer_) {
        offsets_writer_->Abandon();  // a save handed to the pool must not land there either
      }
      Stop(2);  // not restarted by the unit (RestartPreventExitStatus)
      return;
    case ops::StateDirGuard::Verdict::kCannotRestore:
      if (why != state_dir_trouble_) {
        spdlog::error("state_dir {} is gone and cannot be made again: {}", state_guard_->dir(),
                      why);
        state_dir_trouble_ = why;
      }
      return;
  }
}

void Daemon::StartWrap() {
  std::string log_file = setup_.config.wrap_log_file;
  if (const std::size_t at = log_file.find("{pid}"); at != std::string::npos) {
    log_file.replace(at, 5, std::to_string(::getpid()));
  }
  if (host_->uv_loop() == nullptr) {
    spdlog::error("wrap: this daemon has no libuv loop to run the command on");
    Stop(2);
    return;
  }
  source::WrappedChild::Hooks hooks;
  hooks.on_batch = [this](int index, const source::LineBatch& batch) {
    sources_->OnWrapBatch(index, batch);
  };
  hooks.on_pending = [this](int index, std::string_view pending) {
    sources_->OnWrapPending(index, pending);
  };
  hooks.on_end = [this](const source::ChildEnd& end) { OnChildEnd(end); };
  std::vector<std::string> extra_env;
  if (setup_.config.wrap_python_hook) {
    python_hook_ = collect::WrapPythonHook::Prepare(setup_.config.state_dir);
    if (python_hook_) {
      extra_env = python_hook_->Environment();
    }
  }
  if (Status started =
          child_->Start(host_->uv_loop(), options_.wrap, log_file, std::move(hooks), extra_env);
      !started) {
    spdlog::error("{}", started.error().message);
    child_.reset();
    Stop(127);
    return;
  }
  if (!log_file.empty()) {
    sources_->Exclude(log_file);  // watched through the pipe already
  }
  if (!sources_->StartWrap(child_->pid(),
                           std::filesystem::path(options_.wrap.front()).filename().string())) {
    Stop(2);
  }
}

void Daemon::OnChildEnd(const source::ChildEnd& end) {
  spdlog::info("wrap: the command {}", detect::DescribeEnd(end));
  sources_->OnWrapEnded(end, "process " + std::to_string(child_ ? child_->pid() : 0) + " (" +
                                 options_.wrap.front() + ")");
  exit_code_ = end.ShellStatus();
  // The incident the end belongs to is written, its bundle captured and its hooks run before
  // we go.
  stop_after_settle_ = true;
  StopIfWrapDone();
}

void Daemon::StopIfWrapDone() {
  if (draining_ && !stopping_ && incidents_->capture_idle()) {
    Stop(exit_code_);  // SIGTERM waited for this capture
    return;
  }
  if (!stop_after_settle_ || stopping_) {
    return;
  }
  if (incidents_->idle()) {
    if (options_.exit_codes == "verdict") {
      const int own = exit_code_;
      exit_code_ = ops::VerdictExitCode(incidents_->last_failure_verdict(), own);
      if (exit_code_ != own) {
        spdlog::info("wrap: exit status {} for the command's {} (its incident's verdict)",
                     exit_code_, own);
      }
    }
    Stop(exit_code_);  // the command ended and its incident, bundle and hooks are done
  } else if (incidents_->captured() && !said_waiting_) {
    said_waiting_ = true;
    spdlog::info("the command ended; waiting for the on_incident hooks before exiting");
  }
}

void Daemon::Tick() {
  loop_lag_.OnTimer(env_->SteadyNow(), kTick);
  GuardStateDir();
  if (stopping_) {
    return;  // another daemon took the state_dir
  }
  sources_->Tick(env_->SteadyNow());
  if (incidents_->any_unresolved()) {
    const WallTime wall_now = env_->WallNow();
    sources_->ForEachActivity([&](const ops::StreamActivity& activity) {
      incidents_->ObserveStream(activity, wall_now);
    });
    incidents_->RecordResolved();
  }
  UpdateStatus();
  WriteMetrics(/*now=*/false);
}

std::optional<DaemonStart> Daemon::Prepare(const DaemonOptions& options) {
  Result<rules::ConfiguredRules> setup =
      rules::LoadConfiguredRules(config::ConfigPath(options.config_path));
  if (!setup) {
    spdlog::error("cannot start:\n{}", setup.error().message);
    return std::nullopt;
  }
  DaemonStart start;
  const std::string state_dir = setup->config.state_dir;
  // One daemon per state_dir: two would fight over offsets and the control socket.
  start.state_guard = std::make_unique<ops::StateDirGuard>(state_dir);
  Result<bool> locked = start.state_guard->Acquire();
  if (!locked) {
    spdlog::error("cannot start: state_dir {}: {}", state_dir, locked.error().message);
    return std::nullopt;
  }
  if (!*locked) {
    start.state_guard.reset();
    if (options.wrap.empty()) {
      spdlog::error("cannot start: another trainwatch daemon uses state_dir {} ({})", state_dir,
                    std::strerror(EWOULDBLOCK));
      return std::nullopt;
    }
    // The job must run anyway. That daemon watches the configured sources; this wrap watches
    // only its command, and appends its incidents to the same log (whole-line appends).
    spdlog::info("a trainwatch daemon already watches state_dir {}: watching only the command",
                 state_dir);
    start.guest = true;
    LeaveToHost(setup->config);
  }
  start.setup = std::move(*setup);
  return start;
}

void Daemon::Start(DaemonStart start) {
  rules::ConfiguredRules setup = std::move(start.setup);
  state_guard_ = std::move(start.state_guard);
  guest_ = start.guest;
  const std::string state_dir = setup.config.state_dir;
  Result<source::LoadedTailState> state =
      source::LoadTailState(state_dir + "/offsets.json", env_->fs());
  if (!state) {
    spdlog::error("{}; starting without saved offsets", state.error().message);
  } else {
    saved_ = std::move(state->state.tails);
    first_start_ = state->first_start;
  }

  started_ = env_->SteadyNow();
  started_wall_ = env_->WallNow();
  incident::IncidentFlow::Owner owner;
  owner.may_record = [this] {
    GuardStateDir();
    return !state_dir_taken_;
  };
  owner.recorded = [this] {
    sources_->ReleaseIncidentHolds();
    save_timer_->Start(kStateSaveDelay, {});
    UpdateStatus();
  };
  owner.settled = [this] {
    idle_memory_->AfterWork();
    StopIfWrapDone();
  };
  owner.traceback_open = [this] { return sources_ && sources_->AnyTracebackOpen(); };
  job_processes_ = std::make_unique<SourcesAsJobProcesses>(sources_);
  incidents_ = std::make_unique<incident::IncidentFlow>(*env_, state_dir + "/incidents.jsonl",
                                                        *job_processes_, owner);
  AddDaemonSinks(
      *env_, *incidents_, *job_processes_,
      {state_dir, owner.may_record, owner.settled, [this] { return host_->NewHttpClient(); },
       [this](const std::vector<std::string>& lines) {
         for (const std::string& line : lines) {
           if (sources_) {
             sources_->TellProcessesSources(nullptr, line);
           }
         }
       }});
  sources_ = std::make_unique<watch::Sources>(
      *env_, host_->uv_loop(), options_.kmsg_device,
      [this](std::vector<detect::Firing>& firings, detect::StreamDetector* stream) {
        incidents_->OnFirings(firings, stream);
      },
      [this] {
        if (!stopping_ && !save_timer_->active()) {
          save_timer_->Start(kStateSaveDelay, {});
        }
      },
      incidents_->LoadHistory(), std::move(saved_), first_start_);
  if (options_.open_file_limit > 0) {
    sources_->UseDescriptorBudget(std::make_shared<source::DescriptorBudget>(
        source::DescriptorBudget::ForOpenFileLimit(options_.open_file_limit)));
  }
  sources_->set_writers_urgent([this] { return incidents_->any_unresolved(); });
  sources_->set_on_crash_caught([this](const detect::StreamDetector& stream) {
    incidents_->CrashCaught(stream.identity().source, stream.identity().name, stream.crash_line());
  });
  tick_ = env_->NewTimer([this] { Tick(); });
  save_timer_ = env_->NewTimer([this] { SaveState(); });
  idle_memory_ = std::make_unique<IdleMemory>(
      *env_, [this] { return !incidents_->capture_idle(); },
      [] {
        const IdleMemoryRelease release = ReleaseIdleMemory();
        spdlog::debug("idle memory: malloc trimmed, {} file mappings ({} MiB) paged out",
                      release.mappings, release.bytes >> 20);
      });
  watchdog_ = env_->NewTimer([] { ops::NotifyServiceManager("WATCHDOG=1"); });
  host_->WatchSignals([this](int signum) { OnSignal(signum); });

  if (!options_.wrap.empty()) {
    child_ = std::make_unique<source::WrappedChild>();
  }
  // Compiled rule databases are kept in the state_dir: later starts load them instead of
  // compiling.
  std::vector<Diagnostic> notes;
  Result<watch::PreparedSources> prepared = watch::PrepareSources(
      setup.config, setup.rules, !options_.wrap.empty(), RuleCacheDir(state_dir), notes);
  if (Status applied = Apply(std::move(setup), /*initial=*/true, std::move(prepared), notes);
      !applied) {
    spdlog::error("cannot start: {}", applied.error().message);
    Stop(2);
  } else if (guest_) {
    // No control socket: the daemon of this state_dir answers there.
  } else if (Status listening = ListenControl(); !listening) {
    spdlog::error("cannot start the control socket: {}", listening.error().message);
    Stop(2);
  }
  if (!stopping_ && !guest_) {
    incidents_->Start();
    collect::KillCollectorsOfDeadRuns(*env_);
  }
  if (!stopping_ && child_) {
    StartWrap();
  }
  if (!stopping_) {
    tick_->Start(kTick, kTick);
    if (const auto watchdog = ops::WatchdogInterval()) {
      // Pinged from the loop itself: a loop that is stuck stops pinging, and systemd restarts
      // a daemon that would otherwise miss every failure from then on.
      const std::chrono::milliseconds every(std::max<std::int64_t>(
          1, std::chrono::duration_cast<std::chrono::milliseconds>(*watchdog).count() / 2));
      watchdog_->Start(every, every);
    }
    sources_->RequestWriterScan();
    UpdateStatus();
    // Compiling the rules (Hyperscan, RE2) used and freed megabytes that malloc keeps, and
    // start-up's code is paged in: give them back, a watcher's footprint is what stays.
    idle_memory_->AfterWork();
    WriteMetrics(/*now=*/false);  // the textfile exists once the daemon is ready
    ops::NotifyServiceManager("READY=1");
    spdlog::info("watching: {} sources, {} rules; incidents go to {}", sources_->size(),
                 setup_.rules.size(), incidents_->incidents_file());
  }
}

Status Daemon::ListenControl() {
  return host_->ListenControl(
      state_guard_ ? state_guard_->dir() + "/control.sock"
                   : setup_.config.state_dir + "/control.sock",
      [this](const std::string& request, const ops::ControlServer::Reply& reply) {
        HandleControl(request, reply);
      });
}

std::string Daemon::RuleCacheDir(const std::string& state_dir) const {
  return options_.cache_compiled_rules ? state_dir + "/cache" : std::string();
}

namespace {

// One daemon on a real libuv loop, from its start to the loop's close.
int RunOnLoop(const DaemonOptions& options) {
  std::optional<DaemonStart> start = Daemon::Prepare(options);
  if (!start) {
    return 2;
  }
  uv_loop_t loop{};
  uv_loop_init(&loop);
  int exit_code = 0;
  {
    PosixEnv env(&loop);
    PosixDaemonHost host(&loop);
    Daemon daemon(options, env, host);
    daemon.Start(std::move(*start));
    uv_run(&loop, UV_RUN_DEFAULT);
    host.Close();
    uv_run(&loop, UV_RUN_NOWAIT);
    exit_code = daemon.exit_code();
    // The components' handles are closed; their memory goes with the close callbacks, run
    // above.
    const int closed = uv_loop_close(&loop);
    if (closed != 0) {
      spdlog::error("loop did not close cleanly: {}", uv_strerror(closed));
      return exit_code == 0 ? 1 : exit_code;
    }
  }
  return exit_code;
}

}  // namespace

int RunDaemon(const DaemonOptions& options) {
  std::vector<std::string> dropped;
  RestrictPathForRoot(dropped);
  for (const std::string& why : dropped) {
    spdlog::warn("PATH: {}: not searched for the tools the daemon runs as root", why);
  }
  // Before anything opens a descriptor: one per followed file adds up past a soft 1024.
  const OpenFileLimit limit = RaiseOpenFileLimit();
  if (!limit.error.empty()) {
    spdlog::warn(
        "cannot raise the open-file limit from {} to {} ({}): past it, files cannot be "
        "followed",
        limit.soft, limit.hard, limit.error);
  }
  DaemonOptions limited = options;
  limited.open_file_limit = limit.soft;
  return RunOnLoop(limited);
}

}  // namespace trainwatch::app
