// The Daemon's stop (app/running_daemon.h): the signals that ask for it, a capture under way
// finished first within stop_grace, then everything closed in order, and the last resort
// against a wedged pool worker.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

#include "app/running_daemon.h"
#include "ops/service_notify.h"

namespace trainwatch::app {

void Daemon::Stop(int exit_code) {
  if (stopping_) {
    return;
  }
  stopping_ = true;
  exit_code_ = exit_code;
  stop_grace_.reset();
  // Answered while the control socket still can.
  reload_waiters_.insert(reload_waiters_.end(), queued_waiters_.begin(), queued_waiters_.end());
  queued_waiters_.clear();
  FinishReload(Error{"the daemon is stopping; the reload was not applied"});
  SaveState(/*now=*/true);
  incidents_->Abort();
  WriteMetrics(/*now=*/true);  // the final counts, before the sources go
  ops::NotifyServiceManager("STOPPING=1");
  sources_->Close();
  host_->StopControl(/*remove_socket=*/!state_dir_taken_);
  pending_status_.clear();  // their deadlines; the socket that would carry them is closed
  tick_.reset();
  save_timer_.reset();
  watchdog_.reset();
  if (idle_memory_) {
    idle_memory_->Stop();
  }
  host_->StopSignals();
  child_.reset();
  host_->CheckAfterStop(kStopWaitForWorkers, [this] { ExitPastWedgedWorkers(); });
}

void Daemon::ExitPastWedgedWorkers() {
  const Env::PoolWork pool = env_->PoolWorkNow();
  if (pool.running == 0) {
    // Something else holds the loop (a hook's child, a close): no wedge.
    host_->CheckAfterStop(kStopWaitForWorkers, [this] { ExitPastWedgedWorkers(); });
    return;
  }
  spdlog::error(
      "stopping: {} thread-pool worker(s) still busy {} ms after the stop, the oldest for {} "
      "ms (wedged on a hung file system or device?): exiting without them",
      pool.running, kStopWaitForWorkers.count(), pool.oldest.count());
  host_->ExitNow(exit_code_);
}

void Daemon::OnSignal(int signum) {
  if (signum == SIGHUP) {
    Reload();
  } else if (child_ && child_->running()) {
    // At a terminal, Ctrl-C reaches the command directly (same process group): passing it on
    // would interrupt its own handling of the first.
    if (signum != SIGINT || !::isatty(STDIN_FILENO)) {
      spdlog::info("{}: passing it to the command", strsignal(signum));
      child_->Signal(signum);
    }
  } else if (draining_) {
    spdlog::warn("{} again: stopping now", strsignal(signum));
    Stop(exit_code_);
  } else {
    spdlog::info("{}: stopping", strsignal(signum));
    // wrap, after its command ended (waiting for the incident, bundle or hooks): the command's
    // status stands, or a crashed job would look like a success.
    StopAfterCaptures(stop_after_settle_ ? exit_code_ : 0);
  }
}

void Daemon::StopAfterCaptures(int exit_code) {
  exit_code_ = exit_code;
  if (incidents_->capture_idle()) {
    Stop(exit_code);
    return;
  }
  // A bundle half made is the one an operator needs most (the stop may be the reaction to the
  // failure); systemd waits TimeoutStopSec (30 s in the shipped unit) before SIGKILL, so the
  // capture gets stop_grace, within it, and past it is abandoned and recorded as interrupted.
  draining_ = true;
  const Duration grace = setup_.config.capture.stop_grace;
  spdlog::warn(
      "finishing the capture of incident {} before stopping (at most {} ms, then it is "
      "abandoned and recorded as interrupted)",
      fmt::format("{}", fmt::join(incidents_->capturing(), ", ")), grace.count());
  stop_grace_ = env_->NewTimer([this] {
    spdlog::error("stop_grace passed with the capture still under way: abandoning it");
    Stop(exit_code_);
  });
  stop_grace_->Start(std::chrono::duration_cast<std::chrono::milliseconds>(grace), {});
}

}  // namespace trainwatch::app
