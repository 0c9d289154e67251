// DaemonHost: what the Daemon needs of its process besides the Env — the handles that live on
// the libuv loop itself (the signals, the control socket, the loop the kernel log and a wrapped
// command are read on, HTTP for Alertmanager) and the stop's last resort. PosixDaemonHost
// gives the real ones; a test gives its own, delivers signals and control requests by hand
// and runs a whole Daemon on the FakeEnv with no loop at all. Loop thread only.
#pragma once

#include <uv.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "alert/http_client.h"
#include "core/result.h"
#include "core/uv_handle.h"
#include "ops/control_server.h"

namespace trainwatch::app {

class DaemonHost {
 public:
  virtual ~DaemonHost() = default;
  // SIGHUP, SIGTERM and SIGINT reach `on_signal` until StopSignals.
  virtual void WatchSignals(std::function<void(int signum)> on_signal) = 0;
  virtual void StopSignals() = 0;
  // The control socket at `path`, answering through `handler`, until StopControl.
  virtual Status ListenControl(const std::string& path, ops::ControlServer::Handler handler) = 0;
  // `remove_socket`: false when the path is no longer ours (another daemon listens there).
  virtual void StopControl(bool remove_socket) = 0;
  // The loop the kernel log and a wrapped command are read on; null where there is none.
  virtual uv_loop_t* uv_loop() = 0;
  virtual std::unique_ptr<alert::HttpClient> NewHttpClient() = 0;
  // Calls `check` once after `after`, without keeping the loop alive for it: the stop's watch
  // on pool workers that never return (Daemon::ExitPastWedgedWorkers).
  virtual void CheckAfterStop(std::chrono::milliseconds after, std::function<void()> check) = 0;
  // Leaves the process now with `exit_code`, without closing the loop (a worker holds it).
  virtual void ExitNow(int exit_code) = 0;
};

// The real host on `loop`.
class PosixDaemonHost final : public DaemonHost {
 public:
  explicit PosixDaemonHost(uv_loop_t* loop) : loop_(loop) {}
  void WatchSignals(std::function<void(int signum)> on_signal) override;
  void StopSignals() override;
  Status ListenControl(const std::string& path, ops::ControlServer::Handler handler) override;
  void StopControl(bool remove_socket) override;
  uv_loop_t* uv_loop() override { return loop_; }
  std::unique_ptr<alert::HttpClient> NewHttpClient() override;
  void CheckAfterStop(std::chrono::milliseconds after, std::function<void()> check) override;
  void ExitNow(int exit_code) override;
  // Once the loop ran dry: the stop's check is not needed (every worker returned). Its close
  // completes on the loop's next turn.
  void Close();

 private:
  uv_loop_t* loop_;
  std::function<void(int)> on_signal_;
  std::vector<UvHandle<uv_signal_t>> signals_;
  ops::ControlServer control_;
  std::function<void()> stop_check_;
  UvHandle<uv_timer_t> stop_timer_;
};

}  // namespace trainwatch::app
