#include "collect/command_runner.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "collect/stray_processes.h"

namespace trainwatch::collect {
namespace {

// Children started by any runner of this process, for each one's run mark: the capture's,
// the ranks' and the hooks' runners run at the same time, and a mark two of them shared would
// have the end of one child kill the other's as its stray.
std::uint64_t NextRun() {
  static std::atomic<std::uint64_t> runs{0};
  return ++runs;
}

constexpr std::size_t kMaxStderrBytes = 64 * 1024;

}  // namespace

struct CommandRunner::Child {
  std::size_t index = 0;
  config::CommandConfig command;
  std::unique_ptr<ChildProcess> process;
  std::unique_ptr<LoopTimer> timer;
  std::string stdout_bytes;
  std::string stderr_bytes;
  bool truncated = false;
  int open_outputs = 2;
  bool exited = false;
  std::int64_t exit_status = 0;
  int term_signal = 0;
  int stage = 0;  // 0 running, 1 SIGTERM sent, 2 SIGKILL sent
  bool done = false;
  SteadyTime started;
  std::string mark;  // "TRAINWATCH_COLLECTOR_RUN=<daemon pid>.<run>", in every descendant's env

  int pid() const { return process ? process->pid() : 0; }
  void Append(bool is_stderr, std::string_view bytes) {
    std::string& sink = is_stderr ? stderr_bytes : stdout_bytes;
    const std::size_t limit = is_stderr ? kMaxStderrBytes : command.max_output_bytes;
    sink.append(bytes);
    if (sink.size() > limit) {
      truncated = truncated || !is_stderr;
      if (!is_stderr && command.keep_tail) {
        sink.erase(0, sink.size() - limit);
      } else {
        sink.resize(limit);
      }
    }
  }
};

CommandRunner::CommandRunner(Env& env, HungKey hung_key) : env_(env), hung_key_(hung_key) {}

CommandRunner::~CommandRunner() { Abort(); }

void CommandRunner::Run(std::vector<config::CommandConfig> commands, Done done) {
  done_ = std::move(done);
  results_.assign(commands.size(), {});
  pending_ = commands.size();
  for (std::size_t i = 0; i < commands.size(); ++i) {
    collect::CollectorResult& result = results_[i];
    result.name = commands[i].name;
    const std::string tool = commands[i].argv.front();
    if (auto hung = hung_.find(KeyOf(commands[i])); hung != hung_.end()) {
      if (env_.ProcessExists(hung->second)) {
        result.status = collect::CollectorStatus::kSkipped;
        result.detail = "its previous run (pid " + std::to_string(hung->second) +
                        ") is still stuck; not run again until it ends";
        --pending_;
        continue;
      }
      hung_.erase(hung);
    }
    auto child = std::make_unique<Child>();
    Child* raw = child.get();
    raw->index = i;
    raw->command = commands[i];
    raw->started = env_.SteadyNow();
    raw->mark = std::string(kRunMarkName) + "=";
    raw->mark += std::to_string(::getpid());
    raw->mark += '.';
    raw->mark += std::to_string(NextRun());
    raw->timer = env_.NewTimer([this, raw] { OnTimer(*raw); });
    ChildEvents events;
    events.on_output = [raw](bool is_stderr, std::string_view bytes) {
      raw->Append(is_stderr, bytes);
    };
    events.on_output_end = [this, raw](bool) {
      if (--raw->open_outputs == 0 && raw->exited) {
        Finish(*raw);
      }
    };
    events.on_exit = [this, raw](std::int64_t exit_status, int term_signal) {
      raw->exited = true;
      raw->exit_status = exit_status;
      raw->term_signal = term_signal;
      if (raw->open_outputs == 0) {
        Finish(*raw);
      }
    };
    std::vector<std::string> extra_env = raw->command.env;
    extra_env.push_back(raw->mark);
    Result<std::unique_ptr<ChildProcess>> process =
        // In "/": a tool never starts in a directory a user may own (the daemon started by
        // hand from a home directory), where gdb's Python or a shell would look for modules.
        env_.Spawn({raw->command.argv, std::move(extra_env), "/"}, std::move(events));
    if (!process) {
      const bool missing = process.error().message == Env::kNotInstalled;
      result.status =
          missing ? collect::CollectorStatus::kMissing : collect::CollectorStatus::kFailed;
      result.detail = missing ? tool + " is " + process.error().message
                              : "cannot run " + tool + ": " + process.error().message;
      --pending_;
      continue;
    }
    raw->process = std::move(*process);
    raw->timer->Start(raw->command.timeout, {});
    children_.push_back(std::move(child));
  }
  MaybeComplete();
}

void CommandRunner::OnTimer(Child& child) {
  const int group = child.pid();
  if (child.stage < 2) {
    // The deadline: SIGTERM to the group; a second later, SIGKILL.
    ++child.stage;
    env_.Signal(-group, child.stage == 1 ? SIGTERM : SIGKILL);
    child.timer->Start(child.stage == 1 ? kTermGrace : kKillGrace, {});
    return;
  }
  // Still here after SIGKILL: uninterruptible sleep (or a grandchild holding the pipes).
  // Waiting would stall the bundle behind a device that may never answer.
  if (!child.exited) {
    hung_[KeyOf(child.command)] = group;
  }
  Finish(child);
}

void CommandRunner::Finish(Child& child) {
  if (child.done) {
    return;
  }
  child.done = true;
  collect::CollectorResult& result = results_[child.index];
  result.duration_seconds = std::chrono::duration<double>(env_.SteadyNow() - child.started).count();
  result.truncated = child.truncated;
  const std::string timeout_ms =
      std::to_string(std::chrono::milliseconds(child.command.timeout).count());
  if (child.stage > 0 && !child.exited) {
    result.status = collect::CollectorStatus::kAbandoned;
    result.detail = "did not end " + timeout_ms +
                    " ms after its deadline even with SIGKILL (uninterruptible sleep?); "
                    "abandoned, pid " +
                    std::to_string(child.pid());
  } else if (child.stage > 0) {
    result.status = collect::CollectorStatus::kTimedOut;
    result.detail = "killed at its " + timeout_ms + " ms deadline";
  } else if (child.term_signal != 0) {
    result.status = collect::CollectorStatus::kFailed;
    result.detail = std::string("killed by signal ") + strsignal(child.term_signal);
  } else if (child.exit_status != 0) {
    result.status = collect::CollectorStatus::kFailed;
    result.detail = "exit status " + std::to_string(child.exit_status);
  }
  result.exit_code = static_cast<int>(child.exit_status);
  if (!child.stdout_bytes.empty() || result.status == collect::CollectorStatus::kOk) {
    result.bytes += child.stdout_bytes.size();
    collect::AddText(result, child.command.as, std::move(child.stdout_bytes));
  }
  if (!child.stderr_bytes.empty()) {
    result.bytes += child.stderr_bytes.size();
    const std::string first_line = child.stderr_bytes.substr(0, child.stderr_bytes.find('\n'));
    if (result.status == collect::CollectorStatus::kFailed && !first_line.empty()) {
      result.detail += ": " + first_line.substr(0, 300);
      // strerror's words for EPERM and EACCES, as tools print them ("dmesg: read kernel
      // buffer failed: Operation not permitted").
      if (child.exit_status != 0 &&
          (child.stderr_bytes.find("Operation not permitted") != std::string::npos ||
           child.stderr_bytes.find("Permission denied") != std::string::npos)) {
        result.status = collect::CollectorStatus::kNotPermitted;
        result.detail = "not permitted here (" + result.detail + ")";
      }
    }
    collect::AddText(result, child.command.as + ".stderr", std::move(child.stderr_bytes));
  }
  KillStrays(child);
  child.timer.reset();
  child.process.reset();
  --pending_;
  MaybeComplete();
}

void CommandRunner::KillStrays(const Child& child) {
  // Whatever the command left behind (a setsid'd grandchild) would outlive every capture, one
  // more process each time against the unit's TasksMax. The child itself, if abandoned, stays
  // known by its pid in hung_.
  for (const int pid : ProcessesMarked(env_.proc_root(), child.mark)) {
    if (pid != child.pid()) {
      env_.Signal(pid, SIGKILL);
    }
  }
}

void CommandRunner::MaybeComplete() {
  if (pending_ != 0 || !done_) {
    return;
  }
  children_.clear();
  Done done = std::move(done_);
  done_ = nullptr;
  done(std::move(results_));
}

std::vector<std::string> CommandRunner::Running() const {
  std::vector<std::string> names;
  for (const auto& child : children_) {
    if (!child->done) {
      names.push_back(child->command.name);
    }
  }
  return names;
}

void CommandRunner::Abort() {
  for (auto& child : children_) {
    if (!child->done && child->process) {
      env_.Signal(-child->pid(), SIGKILL);
      KillStrays(*child);
    }
  }
  children_.clear();
  done_ = nullptr;
  pending_ = 0;
}

}  // namespace trainwatch::collect
