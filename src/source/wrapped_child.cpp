#include "source/wrapped_child.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>

#include "core/posix_env.h"

namespace trainwatch::source {
namespace {

void WriteAll(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return;  // the terminal went away; the child's output still reaches the log and rules
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

}  // namespace

Status WrappedChild::Start(uv_loop_t* loop, const std::vector<std::string>& argv,
                           const std::string& log_file, Hooks hooks,
                           const std::vector<std::string>& extra_env) {
  hooks_ = std::move(hooks);
  if (!log_file.empty()) {
    std::error_code ignored;
    std::filesystem::create_directories(std::filesystem::path(log_file).parent_path(), ignored);
    log_ = UniqueFd(::open(log_file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
    if (log_.get() < 0) {
      return Error{"wrap: cannot write the log file " + log_file + ": " + std::strerror(errno)};
    }
    log_path_ = log_file;
  }
  int status = 0;
  for (int i = 0; i < 2; ++i) {
    pipes_[i].owner = this;
    pipes_[i].index = i;
    pipes_[i].handle = UvHandle<uv_pipe_t>::Make(loop, status, uv_pipe_init, 0);
    pipes_[i].handle->data = &pipes_[i];
  }
  uv_stdio_container_t stdio[3];
  stdio[0].flags = UV_INHERIT_FD;
  stdio[0].data.fd = 0;
  for (int i = 0; i < 2; ++i) {
    stdio[i + 1].flags = static_cast<uv_stdio_flags>(UV_CREATE_PIPE | UV_WRITABLE_PIPE);
    stdio[i + 1].data.stream = reinterpret_cast<uv_stream_t*>(pipes_[i].handle.get());
  }
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) {
    args.push_back(const_cast<char*>(arg.c_str()));
  }
  args.push_back(nullptr);
  std::vector<std::string> env_strings;
  std::vector<char*> env;
  if (!extra_env.empty()) {
    env_strings = EnvironmentWith(extra_env);
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
  options.exit_cb = [](uv_process_t* process, int64_t exit_status, int term_signal) {
    auto* self = static_cast<WrappedChild*>(process->data);
    if (self == nullptr) {
      return;
    }
    self->end_ = ChildEnd{exit_status, term_signal};
    self->running_ = false;
    self->MaybeFinish();
  };
  process_ = UvHandle<uv_process_t>::Make(loop, status, uv_spawn, &options);
  if (!process_) {
    for (Pipe& pipe : pipes_) {
      pipe.handle.Reset();
    }
    return Error{"wrap: cannot run " + argv[0] + ": " + uv_strerror(status)};
  }
  process_->data = this;
  pid_ = process_->pid;
  running_ = true;
  for (Pipe& pipe : pipes_) {
    pipe.open = true;
    uv_read_start(
        reinterpret_cast<uv_stream_t*>(pipe.handle.get()),
        [](uv_handle_t* handle, size_t, uv_buf_t* buf) {
          auto* reading = static_cast<Pipe*>(handle->data);
          std::vector<char>& buffer = reading->owner->read_buffer_;
          *buf = uv_buf_init(buffer.data(), static_cast<unsigned>(buffer.size()));
        },
        [](uv_stream_t* stream, ssize_t n, const uv_buf_t* buf) {
          if (auto* reading = static_cast<Pipe*>(stream->data)) {
            reading->owner->OnRead(*reading, n, buf);
          }
        });
  }
  return Status::Ok();
}

void WrappedChild::OnRead(Pipe& pipe, ssize_t n, const uv_buf_t* buf) {
  if (n < 0) {
    // End of the stream (or an error, which ends it too): the last unterminated line is
    // complete now.
    while (const source::LineBatch* batch = pipe.framer.NextBatch(/*end_of_input=*/true)) {
      hooks_.on_batch(pipe.index, *batch);
    }
    pipe.open = false;
    pipe.handle.Reset();
    MaybeFinish();
    return;
  }
  if (n == 0) {
    return;
  }
  const auto size = static_cast<std::size_t>(n);
  WriteAll(pipe.index == 0 ? STDOUT_FILENO : STDERR_FILENO, buf->base, size);
  if (log_.get() >= 0) {
    WriteAll(log_.get(), buf->base, size);
  }
  std::size_t done = 0;
  while (done < size) {
    std::span<char> space = pipe.framer.WritableSpace();
    const std::size_t take = std::min(space.size(), size - done);
    std::memcpy(space.data(), buf->base + done, take);
    pipe.framer.Commit(take);
    done += take;
    while (const source::LineBatch* batch = pipe.framer.NextBatch()) {
      hooks_.on_batch(pipe.index, *batch);
    }
  }
  if (pipe.framer.pending_bytes() > 0) {
    hooks_.on_pending(pipe.index, pipe.framer.PendingText());
  }
}

void WrappedChild::MaybeFinish() {
  if (!end_ || pipes_[0].open || pipes_[1].open) {
    return;  // the child's last words may still be in a pipe
  }
  process_.Reset();
  ChildEnd end = *end_;
  end_.reset();
  hooks_.on_end(end);
}

void WrappedChild::Signal(int signum) {
  if (running_ && process_) {
    uv_process_kill(process_.get(), signum);
  }
}

}  // namespace trainwatch::source
