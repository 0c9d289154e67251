#include "app/daemon_host.h"

#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdint>
#include <cstdlib>

#include "alert/curl_http_client.h"

namespace trainwatch::app {

void PosixDaemonHost::WatchSignals(std::function<void(int signum)> on_signal) {
  on_signal_ = std::move(on_signal);
  for (int signum : {SIGHUP, SIGTERM, SIGINT}) {
    int status = 0;
    auto handle = UvHandle<uv_signal_t>::Make(loop_, status, uv_signal_init);
    if (!handle) {
      spdlog::error("cannot watch signal {}: {}", signum, uv_strerror(status));
      continue;
    }
    handle->data = this;
    uv_signal_start(
        handle.get(),
        [](uv_signal_t* signal, int number) {
          auto* self = static_cast<PosixDaemonHost*>(signal->data);
          if (self != nullptr && self->on_signal_) {
            self->on_signal_(number);
          }
        },
        signum);
    signals_.push_back(std::move(handle));
  }
  ::signal(SIGPIPE, SIG_IGN);  // a client that hangs up on the control socket is no reason to die
}

void PosixDaemonHost::StopSignals() { signals_.clear(); }

Status PosixDaemonHost::ListenControl(const std::string& path,
                                      ops::ControlServer::Handler handler) {
  return control_.Start(loop_, path, std::move(handler));
}

void PosixDaemonHost::StopControl(bool remove_socket) { control_.Stop(remove_socket); }

std::unique_ptr<alert::HttpClient> PosixDaemonHost::NewHttpClient() {
  return std::make_unique<alert::CurlHttpClient>(loop_);
}

void PosixDaemonHost::CheckAfterStop(std::chrono::milliseconds after, std::function<void()> check) {
  if (!stop_timer_) {
    int status = 0;
    stop_timer_ = UvHandle<uv_timer_t>::Make(loop_, status, uv_timer_init);
    if (!stop_timer_) {
      return;
    }
    stop_timer_->data = this;
    uv_unref(stop_timer_.base());  // it keeps nothing alive
  }
  stop_check_ = std::move(check);
  uv_timer_start(
      stop_timer_.get(),
      [](uv_timer_t* timer) {
        auto* self = static_cast<PosixDaemonHost*>(timer->data);
        if (self != nullptr && self->stop_check_) {
          // Moved out first: the check may arm the next one, which replaces stop_check_.
          const std::function<void()> due = std::move(self->stop_check_);
          due();
        }
      },
      static_cast<std::uint64_t>(after.count()), 0);
}

void PosixDaemonHost::ExitNow(int exit_code) {
  spdlog::shutdown();  // flushed: nothing after this returns
  std::_Exit(exit_code);
}

void PosixDaemonHost::Close() {
  stop_timer_.Reset();
  signals_.clear();
  control_.Stop(/*remove_socket=*/false);
}

}  // namespace trainwatch::app
