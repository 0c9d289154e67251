// UvTimer: a libuv timer that calls a std::function, so no owner writes the static trampoline
// and `data` cast again. Owned by value; the handle's memory outlives it until libuv's close
// callback (see UvHandle). Loop thread only.
#pragma once

#include <uv.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "core/uv_handle.h"

namespace trainwatch {

class UvTimer {
 public:
  UvTimer() = default;
  // REQUIRES: `loop` outlives the timer's handle (it is closed on that loop).
  UvTimer(uv_loop_t* loop, std::function<void()> fire)
      : fire_(std::make_unique<std::function<void()>>(std::move(fire))) {
    int status = 0;
    handle_ = UvHandle<uv_timer_t>::Make(loop, status, uv_timer_init);
    if (handle_) {
      handle_->data = fire_.get();
    }
  }

  // Fires once after `delay`, then every `repeat` (zero: once). Restarts a running timer.
  void Start(std::chrono::milliseconds delay,
             std::chrono::milliseconds repeat = std::chrono::milliseconds::zero()) {
    if (!handle_) {
      return;
    }
    uv_timer_start(
        handle_.get(),
        [](uv_timer_t* timer) {
          // Null once Reset: a callback already queued must not reach a destroyed owner.
          if (auto* fire = static_cast<std::function<void()>*>(timer->data)) {
            (*fire)();
          }
        },
        static_cast<std::uint64_t>(std::max<std::int64_t>(0, delay.count())),
        static_cast<std::uint64_t>(std::max<std::int64_t>(0, repeat.count())));
  }
  void Stop() {
    if (handle_) {
      uv_timer_stop(handle_.get());
    }
  }
  bool active() const { return handle_ && uv_is_active(handle_.base()) != 0; }
  explicit operator bool() const { return static_cast<bool>(handle_); }
  // Closes the handle; the timer never fires again.
  void Reset() {
    handle_.Reset();
    fire_.reset();
  }

 private:
  std::unique_ptr<std::function<void()>> fire_;  // stable address for the handle's `data`
  UvHandle<uv_timer_t> handle_;
};

}  // namespace trainwatch
