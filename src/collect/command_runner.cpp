#include "collect/command_runner.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

namespace trainwatch::collect {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kMaxStderrBytes = 64 * 1024;

// Whether the abandoned child `pid` still exists; reaps it when it finally died (it is our
// child, and libuv stopped watching it when it was abandoned).
bool StillAlive(int pid) {
  int status = 0;
  const pid_t done = ::waitpid(pid, &status, WNOHANG);
  if (done == pid) {
    return false;
  }
  return ::kill(pid, 0) == 0;
}

// The daemon's environment with `extra` (NAME=value) added, replacing same-named entries.
std::vector<std::string> EnvironmentWith(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  std::set<std::string> replaced;
  for (const std::string& entry : extra) {
    replaced.insert(name_of(entry));
  }
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    if (replaced.count(name_of(*entry)) == 0) {
      env.emplace_back(*entry);
    }
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

}  // namespace

struct CommandRunner::Child {
  CommandRunner* owner = nullptr;
  std::size_t index = 0;
  config::CommandConfig command;
  UvHandle<uv_process_t> process;
  UvHandle<uv_pipe_t> out;
  UvHandle<uv_pipe_t> err;
  UvHandle<uv_timer_t> timer;
  std::string stdout_bytes;
  std::string stderr_bytes;
  bool truncated = false;
  bool out_open = false;
  bool err_open = false;
  bool exited = false;
  std::int64_t exit_status = 0;
  int term_signal = 0;
  int stage = 0;  // 0 running, 1 SIGTERM sent, 2 SIGKILL sent
  bool done = false;
  Clock::time_point started;
  char buffer[64 * 1024];
};

CommandRunner::CommandRunner(uv_loop_t* loop, HungKey hung_key)
    : loop_(loop), hung_key_(hung_key) {}

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
      if (StillAlive(hung->second)) {
        result.status = collect::CollectorStatus::kSkipped;
        result.detail = "its previous run (pid " + std::to_string(hung->second) +
                        ") is still stuck; not run again until it ends";
        --pending_;
        continue;
      }
      hung_.erase(hung);
    }
    auto child = std::make_unique<Child>();
    child->owner = this;
    child->index = i;
    child->command = commands[i];
    child->started = Clock::now();
    int status = 0;
    child->out = UvHandle<uv_pipe_t>::Make(loop_, status, uv_pipe_init, 0);
    child->err = UvHandle<uv_pipe_t>::Make(loop_, status, uv_pipe_init, 0);
    child->timer = UvHandle<uv_timer_t>::Make(loop_, status, uv_timer_init);
    child->out->data = child->err->data = child->timer->data = child.get();
    std::vector<char*> args;
    for (std::string& arg : child->command.argv) {
      args.push_back(arg.data());
    }
    args.push_back(nullptr);
    uv_stdio_container_t stdio[3];
    stdio[0].flags = UV_IGNORE;
    stdio[1].flags = static_cast<uv_stdio_flags>(UV_CREATE_PIPE | UV_WRITABLE_PIPE);
    stdio[1].data.stream = reinterpret_cast<uv_stream_t*>(child->out.get());
    stdio[2].flags = static_cast<uv_stdio_flags>(UV_CREATE_PIPE | UV_WRITABLE_PIPE);
    stdio[2].data.stream = reinterpret_cast<uv_stream_t*>(child->err.get());
    std::vector<std::string> env_strings;
    std::vector<char*> env;
    if (!child->command.env.empty()) {
      env_strings = EnvironmentWith(child->command.env);
      for (std::string& entry : env_strings) {
        env.push_back(entry.data());
      }
      env.push_back(nullptr);
    }
    uv_process_options_t options{};
    options.file = args[0];
    options.args = args.data();
    options.env = env.empty() ? nullptr : env.data();
    options.stdio = stdio;
    options.stdio_count = 3;
    // Its own session and so its own process group: the deadline kills everything it
    // started (a shell's children, docker's helpers), not only the leader.
    options.flags = UV_PROCESS_DETACHED;
    options.exit_cb = [](uv_process_t* process, int64_t exit_status, int term_signal) {
      auto* ended = static_cast<Child*>(process->data);
      if (ended == nullptr) {
        return;
      }
      ended->exited = true;
      ended->exit_status = exit_status;
      ended->term_signal = term_signal;
      if (!ended->out_open && !ended->err_open) {
        ended->owner->Finish(*ended);
      }
    };
    child->process = UvHandle<uv_process_t>::Make(loop_, status, uv_spawn, &options);
    if (!child->process) {
      result.status = status == UV_ENOENT ? collect::CollectorStatus::kMissing
                                          : collect::CollectorStatus::kFailed;
      result.detail = status == UV_ENOENT ? tool + " is not installed here (not on PATH)"
                                          : "cannot run " + tool + ": " + uv_strerror(status);
      --pending_;
      continue;
    }
    child->process->data = child.get();
    Child* raw = child.get();
    for (auto* pipe : {raw->out.get(), raw->err.get()}) {
      (pipe == raw->out.get() ? raw->out_open : raw->err_open) = true;
      uv_read_start(
          reinterpret_cast<uv_stream_t*>(pipe),
          [](uv_handle_t* handle, size_t, uv_buf_t* buf) {
            auto* reading = static_cast<Child*>(handle->data);
            *buf = uv_buf_init(reading->buffer, sizeof reading->buffer);
          },
          [](uv_stream_t* stream, ssize_t n, const uv_buf_t* buf) {
            auto* reading = static_cast<Child*>(stream->data);
            if (reading == nullptr) {
              return;
            }
            const bool is_out = stream == reinterpret_cast<uv_stream_t*>(reading->out.get());
            if (n < 0) {
              uv_read_stop(stream);
              (is_out ? reading->out_open : reading->err_open) = false;
              if (reading->exited && !reading->out_open && !reading->err_open) {
                reading->owner->Finish(*reading);
              }
              return;
            }
            std::string& sink = is_out ? reading->stdout_bytes : reading->stderr_bytes;
            const std::size_t limit = is_out ? reading->command.max_output_bytes : kMaxStderrBytes;
            sink.append(buf->base, static_cast<std::size_t>(n));
            if (sink.size() > limit) {
              reading->truncated = reading->truncated || is_out;
              if (is_out && reading->command.keep_tail) {
                sink.erase(0, sink.size() - limit);
              } else {
                sink.resize(limit);
              }
            }
          });
    }
    ArmTimer(*raw, raw->command.timeout);
    children_.push_back(std::move(child));
  }
  MaybeComplete();
}

void CommandRunner::ArmTimer(Child& child, std::chrono::milliseconds delay) {
  uv_timer_start(
      child.timer.get(),
      [](uv_timer_t* timer) {
        if (auto* c = static_cast<Child*>(timer->data)) {
          c->owner->OnTimer(*c);
        }
      },
      static_cast<std::uint64_t>(delay.count()), 0);
}

void CommandRunner::OnTimer(Child& child) {
  const int group = child.process ? child.process->pid : 0;
  if (child.stage < 2) {
    // The deadline: SIGTERM to the group; a second later, SIGKILL.
    ++child.stage;
    ::kill(-group, child.stage == 1 ? SIGTERM : SIGKILL);
    ArmTimer(child, child.stage == 1 ? kTermGrace : kKillGrace);
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
  result.duration_seconds = std::chrono::duration<double>(Clock::now() - child.started).count();
  result.truncated = child.truncated;
  if (child.stage > 0 && !child.exited) {
    result.status = collect::CollectorStatus::kAbandoned;
    result.detail = "did not end " +
                    std::to_string(std::chrono::milliseconds(child.command.timeout).count()) +
                    " ms after its deadline even with SIGKILL (uninterruptible sleep?); "
                    "abandoned, pid " +
                    std::to_string(child.process ? child.process->pid : 0);
  } else if (child.stage > 0) {
    result.status = collect::CollectorStatus::kTimedOut;
    result.detail = "killed at its " +
                    std::to_string(std::chrono::milliseconds(child.command.timeout).count()) +
                    " ms deadline";
  } else if (child.term_signal != 0) {
    result.status = collect::CollectorStatus::kFailed;
    result.detail = std::string("killed by signal ") + strsignal(child.term_signal);
  } else if (child.exit_status != 0) {
    result.status = collect::CollectorStatus::kFailed;
    result.exit_code = static_cast<int>(child.exit_status);
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
    }
    collect::AddText(result, child.command.as + ".stderr", std::move(child.stderr_bytes));
  }
  child.timer.Reset();
  child.out.Reset();
  child.err.Reset();
  child.process.Reset();
  --pending_;
  MaybeComplete();
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
      ::kill(-child->process->pid, SIGKILL);
    }
  }
  children_.clear();
  done_ = nullptr;
  pending_ = 0;
}

}  // namespace trainwatch::collect
