// The Daemon behind RunDaemon (app/daemon.h), declared here so that its concerns live in files
// of their own: daemon.cpp (start-up, the loop, the state_dir, wrap), daemon_reload.cpp
// (SIGHUP and `trainwatch reload`), daemon_stop.cpp (signals and the stop), daemon_control.cpp (the
// control socket, status, the metrics textfile). Only those files and the daemon's test on the
// FakeEnv (tests/app) include it. Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/daemon.h"
#include "app/daemon_host.h"
#include "app/daemon_sinks.h"
#include "collect/wrap_python_hook.h"
#include "core/env.h"
#include "core/idle_memory.h"
#include "core/latest_file_writer.h"
#include "core/result.h"
#include "incident/incident_flow.h"
#include "ops/control_server.h"
#include "ops/loop_lag.h"
#include "ops/metrics_textfile.h"
#include "ops/state_dir_guard.h"
#include "ops/status_json.h"
#include "rules/configured_rules.h"
#include "source/wrapped_child.h"
#include "watch/sources.h"

namespace trainwatch::app {

// What a start settles before the loop runs: the config and rules read, the state_dir locked.
struct DaemonStart {
  rules::ConfiguredRules setup;
  std::unique_ptr<ops::StateDirGuard> state_guard;  // none: a guest, or a test's fake state_dir
  bool guest = false;  // a wrap beside the daemon that holds the state_dir
};

class Daemon {
 public:
  // `env` and `host` outlive the Daemon.
  Daemon(DaemonOptions options, Env& env, DaemonHost& host)
      : options_(std::move(options)), env_(&env), host_(&host) {}
  // Reads the config and rules and locks the state_dir; nullopt when the daemon cannot start
  // (said why).
  static std::optional<DaemonStart> Prepare(const DaemonOptions& options);
  // Starts everything on the loop; a start that fails stops at once with exit status 2.
  void Start(DaemonStart start);
  bool stopping() const { return stopping_; }
  // The process exit status once stopped: 0 after a clean stop, 2 when the config or rules
  // are unusable at start, the child's status for wrap.
  int exit_code() const { return exit_code_; }
  // A guest (a wrap beside the daemon of its state_dir) leaves these to that daemon.
  static void LeaveToHost(config::DaemonConfig& config);

 private:
  // `prepared`: the sources built for `setup` (their rules compiled), with `notes` on them.
  Status Apply(rules::ConfiguredRules setup, bool initial, Result<watch::PreparedSources> prepared,
               const std::vector<Diagnostic>& notes);
  // SIGHUP: the config and rules are read on the loop (tens of milliseconds); the rules'
  // examples run and the new sources' rules are compiled on the pool (hundreds of
  // milliseconds, seconds for a thousand rules: they would stall every file and the control
  // socket); the new setup is applied on the loop. A SIGHUP meanwhile reloads once more after.
  // `done` (a control client's `reload`, which systemd's ExecReload= waits for) gets the
  // verdict of the reload that reads the files as they are now.
  using ReloadDone = std::function<void(const Result<std::string>& verdict)>;
  void Reload(ReloadDone done = nullptr);
  // What now runs ("3 sources, 85 rules"), or why the old config and rules stay.
  Result<std::string> ApplyReload(rules::ConfiguredRules setup,
                                  const std::vector<Diagnostic>& problems,
                                  Result<watch::PreparedSources> prepared,
                                  const std::vector<Diagnostic>& notes);
  void FinishReload(const Result<std::string>& verdict);
  // The stop's last resort: a pool worker that never returns (a read on a hung network file
  // system sleeps uninterruptibly) would hold the loop, and so the stop, for ever. The state
  // is saved by then: log it and leave (std::_Exit). With no worker busy, it waits again.
  void ExitPastWedgedWorkers();
  static constexpr std::chrono::milliseconds kStopWaitForWorkers{3000};
  void Stop(int exit_code);
  // SIGTERM: a capture under way may finish first, within the config's stop_grace.
  void StopAfterCaptures(int exit_code);
  // Each second and before each incident record: the state_dir is still ours (state_dir_guard.h).
  void GuardStateDir();
  void OnSignal(int signum);
  void Tick();
  Status ListenControl();
  // Where compiled rule databases are kept; empty: nowhere (DaemonOptions).
  std::string RuleCacheDir(const std::string& state_dir) const;
  // The offsets, on the pool (LatestFileWriter); `now`: on the loop, at the stop.
  void SaveState(bool now = false);
  void StartWrap();
  void OnChildEnd(const source::ChildEnd& end);
  // wrap: stops once the command ended and its incident, bundle and hooks are done.
  void StopIfWrapDone();
  void UpdateStatus();
  void HandleControl(const std::string& request, const ops::ControlServer::Reply& reply);
  // `trainwatch status`: its ranks are read from /proc on the pool, which a hung file system
  // or device can hold; past kStatusWait it answers with the ranks read last, and says so.
  void AnswerStatus(const ops::ControlServer::Reply& reply);
  void MapStatusRanks();
  void ReplyStatus(const ops::ControlServer::Reply& reply, bool ranks_fresh);
  ops::DaemonSnapshot Snapshot();
  std::uint64_t MetricsActivity() const;
  void WriteMetrics(bool now);

  DaemonOptions options_;
  Env* env_;
  DaemonHost* host_;
  rules::ConfiguredRules setup_;
  std::vector<source::SavedTail> saved_;
  bool first_start_ = true;
  std::unique_ptr<ops::StateDirGuard> state_guard_;  // none for a wrap beside a daemon
  std::unique_ptr<LoopTimer> stop_grace_;
  bool state_dir_taken_ = false;   // by another daemon, after ours was deleted
  bool draining_ = false;          // SIGTERM came; waiting for the captures under way
  std::string state_dir_trouble_;  // the last "cannot restore" said, so it is said once
  std::unique_ptr<SourcesAsJobProcesses> job_processes_;  // over sources_, for incidents_
  std::unique_ptr<incident::IncidentFlow> incidents_;
  std::unique_ptr<watch::Sources> sources_;
  std::unique_ptr<source::WrappedChild> child_;
  std::unique_ptr<collect::WrapPythonHook> python_hook_;  // wrap: its stacks folder, while it runs
  ops::MetricsTextfile metrics_;
  std::unique_ptr<LoopTimer> tick_;
  ops::LoopLag loop_lag_;  // how late tick_ fires: the watcher's health
  std::unique_ptr<LoopTimer> save_timer_;
  std::unique_ptr<LatestFileWriter> offsets_writer_;
  std::unique_ptr<LoopTimer> watchdog_;
  std::unique_ptr<IdleMemory> idle_memory_;  // what work used, handed back once it settled
  bool stopping_ = false;
  bool guest_ = false;  // wrap beside a daemon that holds the state_dir
  bool stop_after_settle_ = false;
  bool said_waiting_ = false;  // wrap: "waiting for hooks" was logged
  int exit_code_ = 0;
  std::uint64_t setups_applied_ = 0;        // the start and each reload
  bool reloading_ = false;                  // examples of a reload are being checked on the pool
  bool reload_again_ = false;               // a SIGHUP came meanwhile
  std::vector<ReloadDone> reload_waiters_;  // for the reload under way
  std::vector<ReloadDone> queued_waiters_;  // for the one after it (reload_again_)
  std::string last_status_;
  struct PendingStatus {
    ops::ControlServer::Reply reply;
    std::unique_ptr<LoopTimer> deadline;
    bool answered = false;
  };
  std::vector<std::shared_ptr<PendingStatus>> pending_status_;
  bool mapping_status_ranks_ = false;
  std::optional<collect::RankMap> status_ranks_;  // the ranks the last map found...
  SteadyTime status_ranks_at_{};                  // ...and when
  SteadyTime started_;
  WallTime started_wall_;
};

}  // namespace trainwatch::app
