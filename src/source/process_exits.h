// ProcessExitWatch: hears every process exit on the machine, with its wait status, through the
// kernel's process-events connector (netlink, NETLINK_CONNECTOR / CN_IDX_PROC): how a rank
// that was not our child died (a signal, the OOM killer's SIGKILL, an exit code), which
// /proc no longer says once it is gone. Needs CAP_NET_ADMIN in the machine's first network
// namespace (the daemon on the host); elsewhere (a sidecar in a container) it says once why
// not and stays idle, and exits are then only noticed by their absence. Loop thread only.
#pragma once

#include <sys/types.h>
#include <uv.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/unique_fd.h"
#include "core/uv_handle.h"

namespace trainwatch::source {

struct ProcessExit {
  pid_t pid = 0;   // the thread group (the process), not one of its threads
  int status = 0;  // as wait(2) reports it
};

// The process exits in one datagram from the connector: its netlink messages, each a
// cn_msg of the process-events index holding a proc_event. Thread exits (pid != tgid) and
// other events are left out; truncated or foreign messages are skipped. Pure; any thread.
std::vector<ProcessExit> ParseProcessExits(std::span<const char> datagram);

// "killed by signal 9 (SIGKILL)", "killed by signal 6 (SIGABRT), core dumped", "exit code 1",
// "exit code 0".
std::string DescribeWaitStatus(int status);

class ProcessExitWatch {
 public:
  using Sink = std::function<void(const ProcessExit& exit)>;
  ProcessExitWatch() = default;
  ~ProcessExitWatch() { Stop(); }
  ProcessExitWatch(const ProcessExitWatch&) = delete;
  ProcessExitWatch& operator=(const ProcessExitWatch&) = delete;

  // Subscribes; on failure returns false with `why` ("the kernel refused: Operation not
  // permitted") and stays idle.
  bool Start(uv_loop_t* loop, Sink sink, std::string& why);
  void Stop();
  bool running() const { return static_cast<bool>(poll_); }
  // Datagrams the kernel dropped because the daemon read too slowly (ENOBUFS): exits lost.
  std::uint64_t overruns() const { return overruns_; }

 private:
  void OnReadable();

  UniqueFd fd_;
  UvHandle<uv_poll_t> poll_;
  Sink sink_;
  std::uint64_t overruns_ = 0;
};

}  // namespace trainwatch::source
