// NotifySocket: a datagram socket standing in for systemd's NOTIFY_SOCKET, collecting what the
// daemon tells it (READY=1, STATUS=..., WATCHDOG=1, STOPPING=1), one message per line.
// Test thread only.
#pragma once

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include <cstring>
#include <string>

#include "core/unique_fd.h"

namespace trainwatch::testing {

class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path)
      : fd_(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    bound_ = ::bind(fd_.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
    timeval timeout{0, 200000};  // Receive() waits at most this long
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  }
  bool bound() const { return bound_; }

  // Takes in one message if one comes, and says whether `what` was received so far.
  bool Received(const std::string& what) {
    char buffer[4096];
    const ssize_t n = ::recv(fd_.get(), buffer, sizeof buffer, 0);
    if (n > 0) {
      messages_.append(buffer, static_cast<std::size_t>(n)).append("\n");
    }
    return messages_.find(what) != std::string::npos;
  }
  const std::string& messages() const { return messages_; }

 private:
  UniqueFd fd_;
  bool bound_ = false;
  std::string messages_;
};

}  // namespace trainwatch::testing
