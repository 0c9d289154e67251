#include "ops/control_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/unique_fd.h"

namespace trainwatch::ops {
namespace {

constexpr std::size_t kMaxRequestBytes = 64 * 1024;

}  // namespace

Status ControlServer::Start(uv_loop_t* loop, const std::string& path, Handler handler) {
  loop_ = loop;
  path_ = path;
  handler_ = std::move(handler);
  // libuv would cut a longer path short and bind a socket no client finds.
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    return Error{path + ": too long for a unix socket (" + std::to_string(path.size()) +
                 " bytes, at most " + std::to_string(sizeof(sockaddr_un::sun_path) - 1) +
                 "): choose a shorter state_dir"};
  }
  int status = 0;
  server_ = UvHandle<uv_pipe_t>::Make(loop, status, uv_pipe_init, 0);
  if (!server_) {
    return Error{path + ": " + uv_strerror(status)};
  }
  server_->data = this;
  ::unlink(path.c_str());  // a stale socket of a previous run (the state lock says it is ours)
  // Created private from the start: a chmod after bind would leave a moment where anyone
  // could connect and start captures.
  const mode_t old_mask = ::umask(0177);
  status = uv_pipe_bind(server_.get(), path.c_str());
  ::umask(old_mask);
  if (status != 0) {
    server_.Reset();
    return Error{path + ": " + uv_strerror(status)};
  }
  status = uv_listen(reinterpret_cast<uv_stream_t*>(server_.get()), 16,
                     [](uv_stream_t* server, int result) {
                       if (auto* self = static_cast<ControlServer*>(server->data);
                           self != nullptr && result == 0) {
                         self->OnConnection();
                       }
                     });
  if (status != 0) {
    server_.Reset();
    return Error{path + ": " + uv_strerror(status)};
  }
  return Status::Ok();
}

void ControlServer::Stop(bool remove_socket) {
  if (server_) {
    server_.Reset();
    if (remove_socket) {
      ::unlink(path_.c_str());
    }
  }
  clients_.clear();
}

void ControlServer::OnConnection() {
  auto client = std::make_unique<Client>();
  client->owner = this;
  int status = 0;
  client->pipe = UvHandle<uv_pipe_t>::Make(loop_, status, uv_pipe_init, 0);
  if (!client->pipe) {
    return;
  }
  client->pipe->data = client.get();
  if (uv_accept(reinterpret_cast<uv_stream_t*>(server_.get()),
                reinterpret_cast<uv_stream_t*>(client->pipe.get())) != 0) {
    return;
  }
  uv_read_start(
      reinterpret_cast<uv_stream_t*>(client->pipe.get()),
      [](uv_handle_t* handle, size_t, uv_buf_t* buf) {
        auto* reading = static_cast<Client*>(handle->data);
        *buf = uv_buf_init(reading->owner->buffer_, sizeof reading->owner->buffer_);
      },
      [](uv_stream_t* stream, ssize_t n, const uv_buf_t* buf) {
        if (auto* reading = static_cast<Client*>(stream->data)) {
          reading->owner->OnRead(*reading, n, buf);
        }
      });
  clients_.push_back(std::move(client));
}

void ControlServer::OnRead(Client& client, ssize_t n, const uv_buf_t* buf) {
  if (client.done) {
    return;
  }
  if (n > 0) {
    client.request.append(buf->base, static_cast<std::size_t>(n));
  }
  const std::size_t newline = client.request.find('\n');
  if (newline == std::string::npos && n >= 0 && client.request.size() < kMaxRequestBytes) {
    return;  // more to come
  }
  client.done = true;
  uv_read_stop(reinterpret_cast<uv_stream_t*>(client.pipe.get()));
  if (newline == std::string::npos) {
    Finish(client);  // hung up or sent too much without a request
    return;
  }
  // The client may hang up before a late reply: the reply then finds it gone.
  std::weak_ptr<bool> alive = client.alive;
  Client* target = &client;
  handler_(client.request.substr(0, newline), [this, alive, target](std::string response) {
    if (!alive.expired() && *alive.lock()) {
      Send(*target, std::move(response));
    }
  });
}

void ControlServer::Send(Client& client, std::string response) {
  client.response = std::move(response) + "\n";
  uv_buf_t out = uv_buf_init(client.response.data(), static_cast<unsigned>(client.response.size()));
  client.write.data = &client;
  const int status = uv_write(&client.write, reinterpret_cast<uv_stream_t*>(client.pipe.get()),
                              &out, 1, [](uv_write_t* request, int) {
                                auto* written = static_cast<Client*>(request->data);
                                written->owner->Finish(*written);
                              });
  if (status != 0) {
    Finish(client);
  }
}

void ControlServer::Finish(Client& client) {
  *client.alive = false;
  clients_.remove_if([&](const std::unique_ptr<Client>& c) { return c.get() == &client; });
}

Result<std::string> ControlRequest(const std::string& socket_path, const std::string& request,
                                   int timeout_seconds) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) {
    return Error{std::string("socket: ") + std::strerror(errno)};
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof address.sun_path) {
    return Error{socket_path + ": path too long for a unix socket"};
  }
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    return Error{socket_path + ": " + std::strerror(errno)};
  }
  timeval timeout{timeout_seconds, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  const std::string line = request + "\n";
  if (::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    return Error{socket_path + ": " + std::strerror(errno)};
  }
  std::string response;
  char buffer[65536];
  while (true) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return Error{socket_path + ": " + std::strerror(errno)};
    }
    if (n == 0) {
      break;
    }
    response.append(buffer, static_cast<std::size_t>(n));
  }
  if (!response.empty() && response.back() == '\n') {
    response.pop_back();
  }
  return response;
}

}  // namespace trainwatch::ops
