// ControlServer on a real libuv loop and a real unix socket in a temp dir, with limits of
// milliseconds so that each test takes a few: idle and non-reading clients are dropped, the
// client cap answers "busy" and keeps accepting, the byte caps hold, a throwing handler
// costs one error reply.
#include "ops/control_server.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include "core/unique_fd.h"
#include "support/temp_dir.h"

namespace trainwatch::ops {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

// One client socket, non-blocking so that the test drives the loop and the client in turn.
class TestClient {
 public:
  explicit TestClient(const std::string& path)
      : fd_(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    connected_ = ::connect(fd_.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  }
  bool connected() const { return connected_; }
  void Send(const std::string& bytes) {
    ASSERT_EQ(::write(fd_.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  void HalfClose() { ::shutdown(fd_.get(), SHUT_WR); }
  // Takes what has arrived; true once the server has closed the connection.
  bool Read() {
    char buffer[65536];
    while (!closed_) {
      const ssize_t n = ::read(fd_.get(), buffer, sizeof buffer);
      if (n > 0) {
        received_.append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        closed_ = true;
      } else {
        break;
      }
    }
    return closed_;
  }
  const std::string& received() const { return received_; }
  std::string Error() const {
    const json reply = json::parse(received_, nullptr, false);
    return reply.is_object() && reply.contains("error") ? reply["error"].get<std::string>() : "";
  }

 private:
  UniqueFd fd_;
  bool connected_ = false;
  bool closed_ = false;
  std::string received_;
};

class ControlServerTest : public ::testing::Test {
 protected:
  ControlServerTest() {
    ::signal(SIGPIPE, SIG_IGN);  // as the daemon: a gone client is an error code
    uv_loop_init(&loop_);
  }
  ~ControlServerTest() override {
    server_.Stop();
    uv_run(&loop_, UV_RUN_NOWAIT);  // close callbacks
    uv_run(&loop_, UV_RUN_NOWAIT);
    uv_loop_close(&loop_);
  }

  void Start(ControlLimits limits, ControlServer::Handler handler = Echo()) {
    ASSERT_TRUE(server_.Start(&loop_, path(), std::move(handler), limits).ok());
  }
  static ControlServer::Handler Echo() {
    return [](const std::string& request, const ControlServer::Reply& reply) {
      reply(json{{"echo", request}}.dump());
    };
  }
  std::string path() const { return temp_.PathOf("control.sock"); }

  // Runs the loop until `done` (false after two seconds: the caps here are milliseconds).
  template <typename Done>
  bool RunUntil(Done done) {
    const auto give_up = std::chrono::steady_clock::now() + 2s;
    while (std::chrono::steady_clock::now() < give_up) {
      uv_run(&loop_, UV_RUN_NOWAIT);
      if (done()) {
        return true;
      }
      ::poll(nullptr, 0, 1);
    }
    return false;
  }

  testing::TempDir temp_;
  uv_loop_t loop_{};
  ControlServer server_;
};

ControlLimits Fast() {
  ControlLimits limits;
  limits.read_timeout = 50ms;
  limits.write_timeout = 50ms;
  return limits;
}

TEST_F(ControlServerTest, AnswersOneRequestLineAndCloses) {
  Start(Fast());
  TestClient client(path());
  client.Send("{\"command\": \"status\"}\r\n");
  ASSERT_TRUE(RunUntil([&] { return client.Read(); }));
  EXPECT_EQ(client.received(), "{\"echo\":\"{\\\"command\\\": \\\"status\\\"}\"}\n");
  EXPECT_EQ(server_.clients(), 0u);

  // A last line without its newline counts when the client half-closes.
  TestClient half(path());
  half.Send("last");
  half.HalfClose();
  ASSERT_TRUE(RunUntil([&] { return half.Read(); }));
  EXPECT_EQ(half.received(), "{\"echo\":\"last\"}\n");
}

TEST_F(ControlServerTest, DropsAClientThatSendsNoWholeRequestLine) {
  Start(Fast());
  TestClient silent(path());
  TestClient partial(path());
  partial.Send("{\"command\": ");
  ASSERT_TRUE(RunUntil([&] { return server_.clients() == 2; }));
  EXPECT_TRUE(RunUntil([&] { return silent.Read() && partial.Read(); }));
  EXPECT_EQ(server_.clients(), 0u);
  EXPECT_EQ(partial.received(), "");
}

TEST_F(ControlServerTest, DropsAClientThatDoesNotTakeItsReply) {
  const std::string big(4 * 1024 * 1024, 'x');  // more than the socket's buffer takes
  Start(Fast(), [&](const std::string&, const ControlServer::Reply& reply) { reply(big); });
  TestClient client(path());
  client.Send("status\n");
  ASSERT_TRUE(RunUntil([&] { return server_.queued_bytes() > 0; }));
  EXPECT_TRUE(RunUntil([&] { return server_.clients() == 0; }));
  EXPECT_EQ(server_.queued_bytes(), 0u);
  EXPECT_TRUE(RunUntil([&] { return client.Read(); }));
  EXPECT_LT(client.received().size(), big.size());
}

TEST_F(ControlServerTest, BeyondMaxClientsAnswersBusyAndKeepsAccepting) {
  ControlLimits limits = Fast();
  limits.max_clients = 2;
  Start(limits);
  std::vector<std::unique_ptr<TestClient>> idle;
  for (int i = 0; i < 2; ++i) {
    idle.push_back(std::make_unique<TestClient>(path()));
  }
  ASSERT_TRUE(RunUntil([&] { return server_.clients() == 2; }));
  // Many more than the cap and the listen backlog: each is answered and closed at once.
  std::vector<std::unique_ptr<TestClient>> refused;
  for (int i = 0; i < 200; ++i) {
    refused.push_back(std::make_unique<TestClient>(path()));
    if (i % 50 == 49) {
      uv_run(&loop_, UV_RUN_NOWAIT);
    }
  }
  ASSERT_TRUE(RunUntil([&] {
    bool all = true;
    for (auto& client : refused) {
      all = client->Read() && all;
    }
    return all;
  }));
  for (auto& client : refused) {
    EXPECT_EQ(client->Error().rfind("busy: 2 control clients", 0), 0u) << client->received();
  }
  EXPECT_LE(server_.clients(), 2u);
  // Once the idle ones time out, a client is served again.
  ASSERT_TRUE(RunUntil([&] { return server_.clients() == 0; }));
  TestClient late(path());
  late.Send("ok\n");
  ASSERT_TRUE(RunUntil([&] { return late.Read(); }));
  EXPECT_EQ(late.received(), "{\"echo\":\"ok\"}\n");
}

TEST_F(ControlServerTest, ARequestLineOverTheCapGetsAnError) {
  ControlLimits limits = Fast();
  limits.max_request_bytes = 100;
  Start(limits);
  TestClient client(path());
  client.Send(std::string(10000, 'x'));
  ASSERT_TRUE(RunUntil([&] { return client.Read(); }));
  EXPECT_EQ(client.Error(), "bad request: longer than 100 bytes");
}

TEST_F(ControlServerTest, ReplyBytesAreCappedPerClientAndForAll) {
  ControlLimits limits = Fast();
  limits.write_timeout = 10s;  // the non-reading clients stay for the whole test
  limits.max_reply_bytes = 2 * 1024 * 1024;
  limits.max_queued_bytes = 3 * 1024 * 1024;
  Start(limits, [](const std::string& request, const ControlServer::Reply& reply) {
    reply(std::string(request == "huge" ? 3 * 1024 * 1024 : 1536 * 1024, 'x'));
  });
  TestClient huge(path());
  huge.Send("huge\n");
  ASSERT_TRUE(RunUntil([&] { return huge.Read(); }));
  EXPECT_EQ(huge.Error().rfind("reply too large: 3145728 bytes", 0), 0u) << huge.Error();

  TestClient first(path());  // never reads: its reply stays held
  first.Send("big\n");
  ASSERT_TRUE(RunUntil([&] { return server_.queued_bytes() > 0; }));
  TestClient second(path());
  second.Send("big\n");
  ASSERT_TRUE(RunUntil([&] { return second.Read(); }));
  EXPECT_EQ(second.Error().rfind("busy: ", 0), 0u) << second.received().substr(0, 100);
  EXPECT_LE(server_.queued_bytes(), limits.max_queued_bytes);
}

TEST_F(ControlServerTest, AHandlerThatThrowsCostsOneErrorReply) {
  Start(Fast(), [](const std::string& request, const ControlServer::Reply& reply) {
    if (request == "throw") {
      throw std::runtime_error("type_error.302");
    }
    reply("{}");
  });
  TestClient thrower(path());
  thrower.Send("throw\n");
  ASSERT_TRUE(RunUntil([&] { return thrower.Read(); }));
  EXPECT_EQ(thrower.Error(), "internal error: type_error.302");
  TestClient after(path());
  after.Send("fine\n");
  ASSERT_TRUE(RunUntil([&] { return after.Read(); }));
  EXPECT_EQ(after.received(), "{}\n");
}

}  // namespace
}  // namespace trainwatch::ops
