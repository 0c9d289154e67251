// Blocking work that may never return — a read on a hung network file system sleeps in the
// kernel, where no signal but a fatal one reaches it — run so that its caller can give up on
// it: the work runs on a thread of its own, the caller waits until the deadline, and past it
// goes on without the result, the thread left behind (detached: it ends if the file system
// ever answers). Left-behind threads are counted, process-wide, and capped: past
// kMaxStuckCalls, new calls are refused at once instead of leaving more threads behind. The
// thread pool (libuv's four workers) is thereby never the one wedged. Any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

namespace trainwatch {

inline constexpr std::size_t kMaxStuckCalls = 16;

// The calls left behind at their deadline that have not returned since.
std::size_t StuckDeadlineCalls();

namespace deadline_call_detail {
// Counts a call left behind, and its return; false when kMaxStuckCalls are stuck already.
bool MayStart();
void LeftBehind();
void ReturnedLate();
}  // namespace deadline_call_detail

// `work()`'s result, or nullopt with `why` set when it did not return within `deadline` (or
// too many calls are stuck to start another). `work` owns what it touches: it may outlive the
// caller.
template <typename T>
std::optional<T> CallWithDeadline(std::function<T()> work, std::chrono::milliseconds deadline,
                                  std::string& why) {
  if (!deadline_call_detail::MayStart()) {
    why = "not tried: " + std::to_string(StuckDeadlineCalls()) +
          " earlier reads are still stuck (a hung file system?)";
    return std::nullopt;
  }
  struct State {
    std::mutex mutex;
    std::condition_variable done_cv;
    std::optional<T> result;
    bool done = false;
    bool abandoned = false;
  };
  auto state = std::make_shared<State>();
  try {
    std::thread([state, work = std::move(work)] {
      std::optional<T> value;
      try {
        value = work();
      } catch (const std::exception&) {  // an allocation, a library's surprise: no result
      }
      const std::lock_guard lock(state->mutex);
      state->result = std::move(value);
      state->done = true;
      state->done_cv.notify_all();
      if (state->abandoned) {
        deadline_call_detail::ReturnedLate();
      }
    }).detach();
  } catch (const std::system_error& error) {  // no thread to be had (a TasksMax reached)
    why = std::string("not tried: no thread: ") + error.what();
    return std::nullopt;
  }
  std::unique_lock lock(state->mutex);
  if (!state->done_cv.wait_for(lock, deadline, [&] { return state->done; })) {
    state->abandoned = true;
    deadline_call_detail::LeftBehind();
    why = "gave up after " + std::to_string(deadline.count()) +
          " ms (a hung file system?); the read is left behind";
    return std::nullopt;
  }
  if (!state->result) {
    why = "failed (an exception)";
  }
  return std::move(state->result);
}

}  // namespace trainwatch
