#include "ops/service_notify.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/unique_fd.h"

namespace trainwatch::ops {
namespace {

constexpr int kSendTimeoutMicros = 500'000;

std::optional<long long> NumberVariable(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') {
    return std::nullopt;
  }
  long long value = 0;
  const char* end = text + std::strlen(text);
  const auto [at, error] = std::from_chars(text, end, value);
  if (error != std::errc() || at != end) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

bool NotifyServiceManager(std::string_view state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || (path[0] != '/' && path[0] != '@')) {
    return false;  // none, or a vsock address (a VM's manager), which this does not speak
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::size_t length = std::strlen(path);
  if (length >= sizeof(address.sun_path)) {
    return false;
  }
  std::memcpy(address.sun_path, path, length);
  if (address.sun_path[0] == '@') {
    address.sun_path[0] = '\0';  // an abstract socket
  }
  const UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) {
    return false;
  }
  // A full queue (the manager busy) is waited out, briefly: a READY=1 dropped would have a
  // Type=notify unit fail its start.
  const timeval timeout{.tv_sec = 0, .tv_usec = kSendTimeoutMicros};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  const auto size = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + length);
  ssize_t sent = -1;
  do {
    sent = ::sendto(fd.get(), state.data(), state.size(), MSG_NOSIGNAL,
                    reinterpret_cast<const sockaddr*>(&address), size);
  } while (sent < 0 && errno == EINTR);
  return sent == static_cast<ssize_t>(state.size());
}

std::optional<std::chrono::microseconds> WatchdogInterval() {
  const std::optional<long long> usec = NumberVariable("WATCHDOG_USEC");
  if (!usec || *usec <= 0) {
    return std::nullopt;
  }
  if (const std::optional<long long> pid = NumberVariable("WATCHDOG_PID");
      pid && *pid != static_cast<long long>(::getpid())) {
    return std::nullopt;  // meant for another process (our parent's)
  }
  return std::chrono::microseconds(*usec);
}

}  // namespace trainwatch::ops
