// Blocking work that may never return — a read on a hung network file system sleeps in the
// kernel, where no signal but a fatal one reaches it — run so that its caller can give up on
// it: the work runs on a thread of its own, the caller waits until the deadline, and past it
// goes on without the result, the thread left behind (detached: it ends if the file system
// ever answers). The thread pool (libuv's four workers) is thereby never the one wedged.
// Left-behind threads are capped twice: per DeadlineBudget, the caller's share (one per user
// whose files are read, one for the peer watcher), so that one user's FUSE mount or one hung
// shared directory fills its own budget and is refused from then on while every other
// caller's reads still run; and, as a backstop, kMaxStuckCalls for the whole process. A call
// past either cap is refused at once instead of leaving another thread behind. Any thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>

namespace trainwatch {

// The calls left behind that have not returned since, all budgets together, at most (a
// backstop: each budget's cap is far below it).
inline constexpr std::size_t kMaxStuckCalls = 64;
// One budget's, unless it is made with another cap.
inline constexpr std::size_t kStuckCallsPerBudget = 4;
// Users with a budget of their own at once (see UserDeadlineBudget).
inline constexpr std::size_t kMaxUserBudgets = 64;
// How `why` starts when a call was refused (its work never ran), and when it was left behind.
inline constexpr std::string_view kNotTried = "not tried: ";
inline constexpr std::string_view kGaveUp = "gave up after ";

// The calls left behind at their deadline that have not returned since, all budgets together.
std::size_t StuckDeadlineCalls();

class DeadlineBudget;
template <typename T>
std::optional<T> CallWithDeadline(std::function<T()> work, std::chrono::milliseconds deadline,
                                  const DeadlineBudget& budget, std::string& why);

// One caller's share of the calls that may be left behind: at most `cap` of its calls stuck at
// once. Copies share one count (a thread left behind holds a copy, so the count outlives
// whoever made the budget). Any thread.
class DeadlineBudget {
 public:
  explicit DeadlineBudget(std::size_t cap = kStuckCallsPerBudget)
      : count_(std::make_shared<Count>(cap)) {}

  std::size_t stuck() const { return count_->stuck.load(); }
  std::size_t cap() const { return count_->cap; }
  bool operator==(const DeadlineBudget& other) const { return count_ == other.count_; }

 private:
  template <typename T>
  friend std::optional<T> CallWithDeadline(std::function<T()> work,
                                           std::chrono::milliseconds deadline,
                                           const DeadlineBudget& budget, std::string& why);
  struct Count {
    explicit Count(std::size_t most) : cap(most) {}
    std::atomic<std::size_t> stuck{0};
    const std::size_t cap;
  };
  // False, with `why`, when this budget or the process has as many calls stuck as it may.
  // Callers racing past the check may each leave one more behind (as many as call at once).
  bool MayStart(std::string& why) const;
  void LeftBehind() const;    // a call given up at its deadline
  void ReturnedLate() const;  // such a call returned at last

  std::shared_ptr<Count> count_;
};

// The budget of the reads of what user `uid` names (their ranks' files, their job's logs):
// one per uid, process-wide like the threads it counts, whoever started the capture that left
// them. Up to kMaxUserBudgets users' budgets are kept (one with nothing stuck is forgotten to
// make room); past that, and for an unknown user (nullopt), one shared budget.
DeadlineBudget UserDeadlineBudget(std::optional<uid_t> uid);

// The real uid of process `pid` (<proc_root>/PID/status: not the /proc/PID directory's owner,
// which is root for a process that made itself non-dumpable); nullopt when it is gone.
std::optional<uid_t> ProcessRealUid(const std::string& proc_root, pid_t pid);

// `work()`'s result, or nullopt with `why` set: it did not return within `deadline` (`why`
// starts with kGaveUp), `budget` or the process has too many calls stuck to start another
// (kNotTried: the work never ran), or it threw. `work` owns what it touches: it may outlive the
// caller.
template <typename T>
std::optional<T> CallWithDeadline(std::function<T()> work, std::chrono::milliseconds deadline,
                                  const DeadlineBudget& budget, std::string& why) {
  if (!budget.MayStart(why)) {
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
    std::thread([state, budget, work = std::move(work)] {
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
        budget.ReturnedLate();
      }
    }).detach();
  } catch (const std::system_error& error) {  // no thread to be had (a TasksMax reached)
    why = std::string(kNotTried) + "no thread: " + error.what();
    return std::nullopt;
  }
  std::unique_lock lock(state->mutex);
  if (!state->done_cv.wait_for(lock, deadline, [&] { return state->done; })) {
    state->abandoned = true;
    budget.LeftBehind();
    why = std::string(kGaveUp) + std::to_string(deadline.count()) +
          " ms (a hung file system?); the read is left behind";
    return std::nullopt;
  }
  if (!state->result) {
    why = "failed (an exception)";
  }
  return std::move(state->result);
}

}  // namespace trainwatch
