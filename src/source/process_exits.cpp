#include "source/process_exits.h"

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>

#include "source/process_exit_filter.h"

namespace trainwatch::source {
namespace {

template <typename T>
bool ReadAt(std::span<const char> bytes, std::size_t offset, T& out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) {
    return false;
  }
  std::memcpy(&out, bytes.data() + offset, sizeof(T));
  return true;
}

// Sends the connector `op` (listen or ignore): nlmsghdr, cn_msg, then the operation, laid out
// by hand (cn_msg ends in a flexible array).
bool SendOperation(int fd, proc_cn_mcast_op op) {
  nlmsghdr header{};
  cn_msg connector{};
  char message[NLMSG_HDRLEN + sizeof(cn_msg) + sizeof op] = {};
  header.nlmsg_len = sizeof message;
  header.nlmsg_type = NLMSG_DONE;
  connector.id.idx = CN_IDX_PROC;
  connector.id.val = CN_VAL_PROC;
  connector.len = sizeof op;
  std::memcpy(message, &header, sizeof header);
  std::memcpy(message + NLMSG_HDRLEN, &connector, sizeof connector);
  std::memcpy(message + NLMSG_HDRLEN + sizeof(cn_msg), &op, sizeof op);
  return ::send(fd, message, sizeof message, 0) == static_cast<ssize_t>(sizeof message);
}

}  // namespace

std::vector<ProcessExit> ParseProcessExits(std::span<const char> datagram) {
  std::vector<ProcessExit> exits;
  std::size_t offset = 0;
  while (true) {
    nlmsghdr header{};
    if (!ReadAt(datagram, offset, header) || header.nlmsg_len < sizeof(nlmsghdr) ||
        header.nlmsg_len > datagram.size() - offset) {
      break;
    }
    const std::span<const char> message = datagram.subspan(offset, header.nlmsg_len);
    cn_msg connector{};
    proc_event event{};
    if (ReadAt(message, NLMSG_HDRLEN, connector) && connector.id.idx == CN_IDX_PROC &&
        connector.id.val == CN_VAL_PROC && ReadAt(message, NLMSG_HDRLEN + sizeof(cn_msg), event) &&
        event.what == proc_event::PROC_EVENT_EXIT &&
        event.event_data.exit.process_pid == event.event_data.exit.process_tgid) {
      exits.push_back({static_cast<pid_t>(event.event_data.exit.process_tgid),
                       static_cast<int>(event.event_data.exit.exit_code)});
    }
    const std::size_t next = NLMSG_ALIGN(header.nlmsg_len);
    if (next == 0 || next > datagram.size() - offset) {
      break;
    }
    offset += next;
  }
  return exits;
}

std::string DescribeWaitStatus(int status) {
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    const char* name = sigabbrev_np(signal);
    std::string text = "killed by signal " + std::to_string(signal);
    if (name != nullptr) {
      text += std::string(" (SIG") + name + ")";
    }
    return WCOREDUMP(status) ? text + ", core dumped" : text;
  }
  return "exit code " + std::to_string(WEXITSTATUS(status));
}

bool ProcessExitWatch::Start(uv_loop_t* loop, Sink sink, std::string& why) {
  Stop();
  fd_ =
      UniqueFd(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_CONNECTOR));
  if (fd_.get() < 0) {
    why = std::string("no netlink connector socket: ") + std::strerror(errno);
    return false;
  }
  // Before it joins the events: only process exits are ever queued (process_exit_filter.h).
  if (std::string unfiltered; !AttachProcessExitFilter(fd_.get(), unfiltered)) {
    spdlog::warn("process exits: {}; every process event will wake the daemon", unfiltered);
  }
  // A fork storm sends events faster than a busy loop reads them: room for bursts.
  const int room = 4 << 20;
  if (::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUFFORCE, &room, sizeof room) != 0) {
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUF, &room, sizeof room);
  }
  sockaddr_nl address{};
  address.nl_family = AF_NETLINK;
  address.nl_groups = CN_IDX_PROC;
  if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    why = std::string("cannot join the kernel's process events: ") + std::strerror(errno);
    fd_ = UniqueFd();
    return false;
  }
  if (!SendOperation(fd_.get(), PROC_CN_MCAST_LISTEN)) {
    why = std::string("the kernel refused process events: ") + std::strerror(errno);
    fd_ = UniqueFd();
    return false;
  }
  int status = 0;
  poll_ = UvHandle<uv_poll_t>::Make(loop, status, uv_poll_init, fd_.get());
  if (!poll_) {
    why = std::string("cannot poll the process events: ") + uv_strerror(status);
    fd_ = UniqueFd();
    return false;
  }
  sink_ = std::move(sink);
  poll_->data = this;
  uv_poll_start(poll_.get(), UV_READABLE, [](uv_poll_t* handle, int result, int) {
    if (auto* self = static_cast<ProcessExitWatch*>(handle->data); self != nullptr && result == 0) {
      self->OnReadable();
    }
  });
  return true;
}

void ProcessExitWatch::Stop() {
  poll_.Reset();
  if (fd_.get() >= 0) {
    SendOperation(fd_.get(), PROC_CN_MCAST_IGNORE);  // the kernel counts its listeners
  }
  fd_ = UniqueFd();
}

void ProcessExitWatch::OnReadable() {
  alignas(nlmsghdr) char buffer[16384];
  // A bounded number of datagrams per wake-up: a fork storm must not hold the loop.
  for (int budget = 256; budget > 0; --budget) {
    sockaddr_nl from{};
    socklen_t from_size = sizeof from;
    const ssize_t n = ::recvfrom(fd_.get(), buffer, sizeof buffer, 0,
                                 reinterpret_cast<sockaddr*>(&from), &from_size);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && errno == ENOBUFS) {
      if (overruns_++ == 0) {
        spdlog::warn(
            "process exits: the kernel dropped process events (read too slowly); how "
            "some processes ended will be unknown");
      }
      continue;
    }
    if (n <= 0) {
      break;
    }
    if (from.nl_pid != 0) {
      continue;  // not from the kernel
    }
    for (const ProcessExit& exit : ParseProcessExits({buffer, static_cast<std::size_t>(n)})) {
      sink_(exit);
    }
  }
}

}  // namespace trainwatch::source
