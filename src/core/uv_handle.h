// UvHandle<T>: owns one libuv handle (timer, signal, fs_event, pipe, process...). libuv
// closes handles asynchronously: the memory must stay valid until the close callback runs,
// so the handle lives on the heap and the destructor hands it to uv_close, whose callback
// frees it. The loop must then run once more (the daemon drains it before uv_loop_close).
// Move-only; loop thread only.
#pragma once

#include <uv.h>

#include <type_traits>
#include <utility>

namespace trainwatch {

template <typename T>
class UvHandle {
 public:
  UvHandle() = default;
  // Allocates the handle and runs `init(loop, handle, args...)` (uv_timer_init and the
  // like). On failure the handle stays empty and `status` holds libuv's error code.
  template <typename Init, typename... Args>
  static UvHandle Make(uv_loop_t* loop, int& status, Init init, Args&&... args) {
    T* raw = new T{};
    status = init(loop, raw, std::forward<Args>(args)...);
    if (status != 0) {
      if constexpr (std::is_same_v<T, uv_process_t>) {
        // A failed uv_spawn leaves the handle initialised (in the loop's handle list): it must
        // be closed like any other, or the loop keeps a dangling pointer.
        UvHandle(raw).Reset();
      } else {
        delete raw;  // never initialised: nothing to close
      }
      return UvHandle();
    }
    return UvHandle(raw);
  }

  UvHandle(UvHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  UvHandle& operator=(UvHandle&& other) noexcept {
    if (this != &other) {
      Reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  UvHandle(const UvHandle&) = delete;
  UvHandle& operator=(const UvHandle&) = delete;
  ~UvHandle() { Reset(); }

  T* get() const { return handle_; }
  T* operator->() const { return handle_; }
  explicit operator bool() const { return handle_ != nullptr; }
  uv_handle_t* base() const { return reinterpret_cast<uv_handle_t*>(handle_); }

  void Reset() {
    if (handle_ == nullptr) {
      return;
    }
    uv_handle_t* handle = reinterpret_cast<uv_handle_t*>(std::exchange(handle_, nullptr));
    handle->data = nullptr;  // callbacks already queued must not reach a destroyed owner
    uv_close(handle, [](uv_handle_t* closed) { delete reinterpret_cast<T*>(closed); });
  }

 private:
  explicit UvHandle(T* handle) : handle_(handle) {}
  T* handle_ = nullptr;
};

}  // namespace trainwatch
