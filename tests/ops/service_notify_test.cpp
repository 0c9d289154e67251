// The service manager's notification protocol without libsystemd: datagrams to a path or an
// abstract $NOTIFY_SOCKET, nothing without one, and the watchdog interval only for this pid.
#include "ops/service_notify.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/unique_fd.h"
#include "support/temp_dir.h"

namespace trainwatch::ops {
namespace {

// A datagram socket bound where $NOTIFY_SOCKET says ("@name": abstract), as systemd binds it.
UniqueFd Bind(const std::string& where) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, where.data(), where.size());
  if (where.front() == '@') {
    address.sun_path[0] = '\0';
  }
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address),
                   static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + where.size())),
            0)
      << std::strerror(errno);
  return fd;
}

std::string Receive(const UniqueFd& fd) {
  char buffer[256];
  const ssize_t n = ::recv(fd.get(), buffer, sizeof(buffer), MSG_DONTWAIT);
  return n < 0 ? "<nothing>" : std::string(buffer, static_cast<std::size_t>(n));
}

class ServiceNotifyTest : public ::testing::Test {
 protected:
  void TearDown() override {
    ::unsetenv("NOTIFY_SOCKET");
    ::unsetenv("WATCHDOG_USEC");
    ::unsetenv("WATCHDOG_PID");
  }
};

TEST_F(ServiceNotifyTest, SendsEachStateAsOneDatagramToAPathOrAnAbstractSocket) {
  testing::TempDir dir;
  const std::string path = dir.PathOf("notify");
  const UniqueFd on_path = Bind(path);
  ::setenv("NOTIFY_SOCKET", path.c_str(), 1);
  EXPECT_TRUE(NotifyServiceManager("READY=1"));
  EXPECT_TRUE(NotifyServiceManager("STATUS=watching 3 files"));
  EXPECT_EQ(Receive(on_path), "READY=1");
  EXPECT_EQ(Receive(on_path), "STATUS=watching 3 files");

  const std::string abstract = "@trainwatch-test-" + std::to_string(::getpid());
  const UniqueFd on_abstract = Bind(abstract);
  ::setenv("NOTIFY_SOCKET", abstract.c_str(), 1);
  EXPECT_TRUE(NotifyServiceManager("WATCHDOG=1"));
  EXPECT_EQ(Receive(on_abstract), "WATCHDOG=1");
}

TEST_F(ServiceNotifyTest, WithoutAManagerNothingIsSent) {
  EXPECT_FALSE(NotifyServiceManager("READY=1"));
  ::setenv("NOTIFY_SOCKET", "", 1);
  EXPECT_FALSE(NotifyServiceManager("READY=1"));
  ::setenv("NOTIFY_SOCKET", "vsock:2:1234", 1);  // a VM's manager: not spoken here
  EXPECT_FALSE(NotifyServiceManager("READY=1"));
  testing::TempDir dir;
  ::setenv("NOTIFY_SOCKET", dir.PathOf("nobody-listens").c_str(), 1);
  EXPECT_FALSE(NotifyServiceManager("READY=1"));
}

TEST_F(ServiceNotifyTest, TheWatchdogIntervalIsForThisProcessOnly) {
  EXPECT_FALSE(WatchdogInterval());
  ::setenv("WATCHDOG_USEC", "30000000", 1);
  EXPECT_EQ(WatchdogInterval(), std::chrono::seconds(30));
  ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
  EXPECT_EQ(WatchdogInterval(), std::chrono::seconds(30));
  ::setenv("WATCHDOG_PID", std::to_string(::getpid() + 1).c_str(), 1);
  EXPECT_FALSE(WatchdogInterval());
  ::unsetenv("WATCHDOG_PID");
  for (const char* bad : {"0", "-5", "12s", ""}) {
    ::setenv("WATCHDOG_USEC", bad, 1);
    EXPECT_FALSE(WatchdogInterval()) << bad;
  }
}

}  // namespace
}  // namespace trainwatch::ops
