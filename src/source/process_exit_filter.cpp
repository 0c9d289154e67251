#include "source/process_exit_filter.h"

#include <arpa/inet.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace trainwatch::source {
namespace {

// Where the fields stand in a datagram: nlmsghdr, cn_msg, then the proc_event (as
// ParseProcessExits reads them).
constexpr std::uint32_t kEventAt = NLMSG_HDRLEN + sizeof(cn_msg);
constexpr std::uint32_t kWhatAt = kEventAt + offsetof(proc_event, what);
constexpr std::uint32_t kPidAt = kEventAt + offsetof(proc_event, event_data.exit.process_pid);
constexpr std::uint32_t kTgidAt = kEventAt + offsetof(proc_event, event_data.exit.process_tgid);

sock_filter Statement(std::uint16_t code, std::uint32_t k) { return {code, 0, 0, k}; }
sock_filter Jump(std::uint16_t code, std::uint32_t k, std::uint8_t if_true, std::uint8_t if_false) {
  return {code, if_true, if_false, k};
}

}  // namespace

std::vector<sock_filter> ProcessExitFilter() {
  // A word load (BPF_ABS) reads network byte order into host order, and the kernel writes
  // these fields in host order: the constant is compared as htonl makes it, and pid and tgid
  // are compared both loaded alike.
  return {
      Statement(BPF_LD | BPF_W | BPF_ABS, kWhatAt),
      Jump(BPF_JMP | BPF_JEQ | BPF_K, htonl(proc_event::PROC_EVENT_EXIT), 0, 6),
      Statement(BPF_LD | BPF_W | BPF_ABS, kTgidAt),
      Statement(BPF_ST, 0),
      Statement(BPF_LDX | BPF_W | BPF_MEM, 0),
      Statement(BPF_LD | BPF_W | BPF_ABS, kPidAt),
      Jump(BPF_JMP | BPF_JEQ | BPF_X, 0, 0, 1),
      Statement(BPF_RET | BPF_K, 0xffffffffU),  // the whole datagram
      Statement(BPF_RET | BPF_K, 0),            // dropped
  };
}

bool AttachProcessExitFilter(int fd, std::string& why) {
  std::vector<sock_filter> program = ProcessExitFilter();
  const sock_fprog attached{static_cast<unsigned short>(program.size()), program.data()};
  if (::setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &attached, sizeof attached) != 0) {
    why = std::string("cannot filter the process events: ") + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace trainwatch::source
