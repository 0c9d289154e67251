// WrappedChild: the training command run by `trainwatch wrap`. Its stdout and stderr come
// through pipes: each chunk is passed through unchanged (to our stdout or stderr, and to the
// log file named in the config), and framed into lines for the daemon to watch. Reports the
// child's end (exit code or signal) once both pipes are drained. Loop thread only.
#pragma once

#include <uv.h>

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"
#include "core/uv_handle.h"
#include "source/child_end.h"
#include "source/line_framer.h"

namespace trainwatch::source {

class WrappedChild {
 public:
  struct Hooks {
    // Lines from stdout (stream 0) or stderr (stream 1).
    std::function<void(int stream, const source::LineBatch& batch)> on_batch;
    std::function<void(int stream, std::string_view pending)> on_pending;
    std::function<void(const ChildEnd& end)> on_end;
  };

  // Starts `argv` with stdin inherited and our environment, `extra_env` ("NAME=value") replacing
  // same-named entries; `log_file` may be empty. Errors name the command.
  Status Start(uv_loop_t* loop, const std::vector<std::string>& argv, const std::string& log_file,
               Hooks hooks, const std::vector<std::string>& extra_env = {});
  // Forwards a signal (SIGINT, SIGTERM) to the child.
  void Signal(int signum);
  bool running() const { return running_; }
  int pid() const { return pid_; }
  const std::string& log_file() const { return log_path_; }

 private:
  struct Pipe {
    WrappedChild* owner = nullptr;
    int index = 0;
    UvHandle<uv_pipe_t> handle;
    source::LineFramer framer{source::kDefaultMaxLineBytes, 64 * 1024};
    bool open = false;
  };
  void OnRead(Pipe& pipe, ssize_t n, const uv_buf_t* buf);
  void MaybeFinish();

  UvHandle<uv_process_t> process_;
  std::array<Pipe, 2> pipes_;
  UniqueFd log_;
  std::string log_path_;
  Hooks hooks_;
  std::optional<ChildEnd> end_;
  bool running_ = false;
  int pid_ = 0;
  std::vector<char> read_buffer_ = std::vector<char>(64 * 1024);
};

}  // namespace trainwatch::source
