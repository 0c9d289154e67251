#include "support/fake_env.h"

#include <signal.h>

#include <algorithm>
#include <stdexcept>
#include <tuple>

namespace trainwatch::testing {
namespace {

// A loop that never runs out of work is a bug in the code under test (or the test).
constexpr int kMaxTurns = 100000;

class FakeTimer final : public LoopTimer {
 public:
  FakeTimer(FakeEnv& env, std::shared_ptr<FakeEnv::TimerState> state, std::uint64_t* order)
      : env_(env), state_(std::move(state)), order_(order) {}
  void Start(std::chrono::milliseconds delay, std::chrono::milliseconds repeat) override {
    state_->active = true;
    state_->due = env_.SteadyNow() + delay;
    state_->repeat = repeat;
    state_->order = (*order_)++;
  }
  void Stop() override { state_->active = false; }
  bool active() const override { return state_->active; }

 private:
  FakeEnv& env_;
  std::shared_ptr<FakeEnv::TimerState> state_;
  std::uint64_t* order_;
};

class FakeIdle final : public LoopIdle {
 public:
  explicit FakeIdle(std::shared_ptr<FakeEnv::IdleState> state) : state_(std::move(state)) {}
  void Start() override { state_->active = true; }
  void Stop() override { state_->active = false; }
  bool active() const override { return state_->active; }

 private:
  std::shared_ptr<FakeEnv::IdleState> state_;
};

// Holds what it watches alive; dropping it ends the watch.
template <typename State>
class FakeWatch final : public ChangeWatch {
 public:
  explicit FakeWatch(std::shared_ptr<State> state) : state_(std::move(state)) {}

 private:
  std::shared_ptr<State> state_;
};

class FakeChildProcess final : public ChildProcess {
 public:
  explicit FakeChildProcess(std::shared_ptr<FakeEnv::Child> child) : child_(std::move(child)) {}
  ~FakeChildProcess() override { child_->listened_to = false; }
  int pid() const override { return child_->pid; }

 private:
  std::shared_ptr<FakeEnv::Child> child_;
};

template <typename T>
void DropExpired(std::vector<std::weak_ptr<T>>& list) {
  list.erase(std::remove_if(list.begin(), list.end(),
                            [](const std::weak_ptr<T>& item) { return item.expired(); }),
             list.end());
}

}  // namespace

FakeEnv::FakeEnv(std::string proc_root)
    : proc_root_(std::move(proc_root)),
      steady_(SteadyTime{} + std::chrono::hours(1000)),
      wall_(WallTime{} + std::chrono::hours(24 * 365 * 56)) {
  files_.on_change = [this](const std::string& dir, const std::string& name, bool renamed) {
    file_events_.emplace_back(dir, name, renamed ? DirEvent::kRename : DirEvent::kWrite);
  };
}

FakeEnv::~FakeEnv() { files_.on_change = nullptr; }

void FakeEnv::CloseWrite(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == 0 ? "/" : path.substr(0, slash);
  file_events_.emplace_back(dir, path.substr(slash + 1), DirEvent::kCloseWrite);
}

std::unique_ptr<LoopTimer> FakeEnv::NewTimer(std::function<void()> on_fire) {
  auto state = std::make_shared<TimerState>();
  state->fire = std::move(on_fire);
  timers_.push_back(state);
  return std::make_unique<FakeTimer>(*this, state, &next_order_);
}

std::unique_ptr<LoopIdle> FakeEnv::NewIdle(std::function<void()> on_turn) {
  auto state = std::make_shared<IdleState>();
  state->turn = std::move(on_turn);
  idles_.push_back(state);
  return std::make_unique<FakeIdle>(state);
}

void FakeEnv::RunOnPool(std::function<void()> work, std::function<void()> done) {
  pool_.push_back({std::move(work), std::move(done)});
}

void FakeEnv::StepPool() {
  if (pool_.empty()) {
    return;
  }
  PoolTask task = std::move(pool_.front());
  pool_.pop_front();
  task.work();
  task.done();
}

void FakeEnv::ReleasePool() {
  pool_held_ = false;
  RunUntilIdle();
}

Result<std::unique_ptr<ChangeWatch>> FakeEnv::WatchDirectory(const std::string& dir,
                                                             DirChange on_change) {
  const Result<FileStatus> status = files_.Stat(dir);
  if (!status || status->type != FileType::kDirectory) {
    return Error{"no such file or directory"};
  }
  auto state = std::make_shared<WatchState>(WatchState{dir, std::move(on_change)});
  watches_.push_back(state);
  return std::unique_ptr<ChangeWatch>(std::make_unique<FakeWatch<WatchState>>(state));
}

Result<std::unique_ptr<ChangeWatch>> FakeEnv::PollFile(const std::string& path,
                                                       std::chrono::milliseconds interval,
                                                       std::function<void(bool gone)> on_change) {
  auto state = std::make_shared<TimerState>();
  // As uv_fs_poll: compares the status at each interval with the last one seen.
  auto last = std::make_shared<Result<FileStatus>>(files_.Stat(path));
  state->fire = [this, path, last, on_change = std::move(on_change)] {
    Result<FileStatus> now = files_.Stat(path);
    const bool was = last->ok();
    const bool is = now.ok();
    const bool changed =
        was != is || (is && (now->inode != (*last)->inode || now->size != (*last)->size));
    *last = std::move(now);
    if (changed) {
      on_change(!is);
    }
  };
  state->active = true;
  state->due = steady_ + interval;
  state->repeat = interval;
  state->order = next_order_++;
  timers_.push_back(state);
  polls_[path] = state;
  return std::unique_ptr<ChangeWatch>(std::make_unique<FakeWatch<TimerState>>(state));
}

Result<std::unique_ptr<ChildProcess>> FakeEnv::Spawn(const SpawnOptions& options,
                                                     ChildEvents events) {
  if (options.argv.empty() || not_installed.count(options.argv.front()) != 0) {
    return Error{std::string(kNotInstalled)};
  }
  auto child = std::make_shared<Child>();
  child->options = options;
  child->pid = next_pid_++;
  child->events = std::move(events);
  children_.push_back(child);
  return std::unique_ptr<ChildProcess>(std::make_unique<FakeChildProcess>(child));
}

void FakeEnv::Output(Child& child, std::string_view text, bool is_stderr) {
  if (child.listened_to && child.open_pipes > 0) {
    child.events.on_output(is_stderr, text);
  }
}

void FakeEnv::EndOutput(Child& child) {
  while (child.open_pipes > 0) {
    --child.open_pipes;
    if (child.listened_to) {
      child.events.on_output_end(/*is_stderr=*/child.open_pipes == 0);
    }
  }
}

void FakeEnv::Exit(Child& child, std::int64_t status, int term_signal, bool keep_pipes) {
  if (!child.alive) {
    return;
  }
  child.alive = false;
  if (!keep_pipes) {
    EndOutput(child);
  }
  if (child.listened_to) {
    child.events.on_exit(status, term_signal);
  }
}

void FakeEnv::Signal(int pid, int signal) {
  bool child_of_ours = false;
  for (const std::shared_ptr<Child>& child : children_) {
    if (child->pid == std::abs(pid)) {
      child_of_ours = true;
      child->signals.push_back(signal);
      if (signals_kill && child->alive && (signal == SIGTERM || signal == SIGKILL)) {
        std::shared_ptr<Child> killed = child;
        deferred_.push_back([this, killed, signal] { Exit(*killed, 0, signal); });
      }
    }
  }
  if (!child_of_ours) {
    other_signals.emplace_back(pid, signal);
    if (signal == SIGKILL) {
      live_pids.erase(pid);
    }
  }
}

bool FakeEnv::ProcessExists(int pid) {
  for (const std::shared_ptr<Child>& child : children_) {
    if (child->pid == pid) {
      return child->alive;
    }
  }
  return live_pids.count(pid) != 0;
}

bool FakeEnv::RunOneTurn() {
  bool worked = false;
  // Timers due now (a zero delay, or time advanced past them).
  FireDueTimers(steady_);
  while (!deferred_.empty()) {
    std::function<void()> next = std::move(deferred_.front());
    deferred_.pop_front();
    next();
    worked = true;
  }
  while (!file_events_.empty()) {
    const auto [dir, name, event] = file_events_.front();
    file_events_.pop_front();
    DropExpired(watches_);
    const std::vector<std::weak_ptr<WatchState>> watches = watches_;
    for (const std::weak_ptr<WatchState>& weak : watches) {
      if (std::shared_ptr<WatchState> watch = weak.lock(); watch && watch->dir == dir) {
        watch->on_change(name, event);
      }
    }
    worked = true;
  }
  DropExpired(idles_);
  const std::vector<std::weak_ptr<IdleState>> idles = idles_;
  for (const std::weak_ptr<IdleState>& weak : idles) {
    if (std::shared_ptr<IdleState> idle = weak.lock(); idle && idle->active) {
      const std::function<void()> turn = idle->turn;  // it may destroy itself
      turn();
      worked = true;
    }
  }
  if (!pool_held_ && !pool_.empty()) {
    PoolTask task = std::move(pool_.front());
    pool_.pop_front();
    task.work();
    task.done();
    worked = true;
  }
  return worked;
}

void FakeEnv::RunUntilIdle() {
  for (int turn = 0; turn < kMaxTurns; ++turn) {
    if (!RunOneTurn()) {
      return;
    }
  }
  throw std::logic_error("FakeEnv: the loop never ran out of work");
}

void FakeEnv::FireDueTimers(SteadyTime until) {
  for (int fired = 0; fired < kMaxTurns; ++fired) {
    DropExpired(timers_);
    std::shared_ptr<TimerState> next;
    for (const std::weak_ptr<TimerState>& weak : timers_) {
      std::shared_ptr<TimerState> timer = weak.lock();
      if (timer && timer->active && timer->due <= until &&
          (!next || std::tie(timer->due, timer->order) < std::tie(next->due, next->order))) {
        next = timer;
      }
    }
    if (!next) {
      return;
    }
    if (next->due > steady_) {
      wall_ += next->due - steady_;
      steady_ = next->due;
    }
    if (next->repeat.count() > 0) {
      next->due += next->repeat;
      next->order = next_order_++;
    } else {
      next->active = false;
    }
    const std::function<void()> fire = next->fire;  // the timer may be destroyed by it
    fire();
  }
  throw std::logic_error("FakeEnv: timers keep firing without time passing");
}

void FakeEnv::Advance(std::chrono::milliseconds by) {
  const SteadyTime target = steady_ + by;
  RunUntilIdle();
  while (true) {
    // One timer at a time, each followed by whatever it set off.
    DropExpired(timers_);
    SteadyTime earliest = target;
    bool any = false;
    for (const std::weak_ptr<TimerState>& weak : timers_) {
      if (std::shared_ptr<TimerState> timer = weak.lock();
          timer && timer->active && timer->due <= target && (!any || timer->due < earliest)) {
        earliest = timer->due;
        any = true;
      }
    }
    if (!any) {
      break;
    }
    FireDueTimers(earliest);
    RunUntilIdle();
  }
  wall_ += target - steady_;
  steady_ = target;
  RunUntilIdle();
}

std::set<std::string> FakeEnv::watched_dirs() const {
  std::set<std::string> dirs;
  for (const std::weak_ptr<WatchState>& weak : watches_) {
    if (std::shared_ptr<WatchState> watch = weak.lock()) {
      dirs.insert(watch->dir);
    }
  }
  return dirs;
}

std::set<std::string> FakeEnv::polled_files() const {
  std::set<std::string> paths;
  for (const auto& [path, weak] : polls_) {
    if (std::shared_ptr<TimerState> poll = weak.lock(); poll && poll->active) {
      paths.insert(path);
    }
  }
  return paths;
}

std::size_t FakeEnv::active_timers() const {
  return static_cast<std::size_t>(
      std::count_if(timers_.begin(), timers_.end(), [](const std::weak_ptr<TimerState>& weak) {
        std::shared_ptr<TimerState> timer = weak.lock();
        return timer && timer->active;
      }));
}

}  // namespace trainwatch::testing
