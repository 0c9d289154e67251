#include "ops/control_server.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "core/unique_fd.h"
#include "ops/control_request.h"

namespace trainwatch::ops {
namespace {

// One reply on its way. libuv owns it until its callback, which may come after the client
// is gone (a dropped client's pending write is cancelled when its pipe closes): so it lives
// on its own and reaches the client only while `alive` says the client still exists.
struct PendingWrite {
  uv_write_t request{};
  std::string bytes;
  std::weak_ptr<bool> alive;
  std::function<void()> done;
};

uv_stream_t* Stream(uv_pipe_t* pipe) { return reinterpret_cast<uv_stream_t*>(pipe); }

// Reads away what a client sent and nobody will read (a refused request, the rest of one over
// the cap): a unix socket closed with unread bytes resets the connection, and the client
// would lose the reply waiting for it. Bounded: a client still sending loses it anyway.
void DiscardUnread(uv_pipe_t* pipe) {
  uv_os_fd_t fd = -1;
  if (pipe == nullptr || uv_fileno(reinterpret_cast<uv_handle_t*>(pipe), &fd) != 0) {
    return;
  }
  char sink[16384];
  for (int i = 0; i < 64 && ::recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; ++i) {
  }
}

}  // namespace

Status ControlServer::Start(uv_loop_t* loop, const std::string& path, Handler handler,
                            ControlLimits limits) {
  loop_ = loop;
  path_ = path;
  handler_ = std::move(handler);
  limits_ = limits;
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
  status = uv_listen(Stream(server_.get()), 128, [](uv_stream_t* server, int result) {
    if (auto* self = static_cast<ControlServer*>(server->data)) {
      self->OnConnection(result);
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
  queued_bytes_ = 0;
}

void ControlServer::OnConnection(int result) {
  if (result != 0) {
    // Out of descriptors (libuv has already closed the pending connection to keep the
    // listener going) or the like: nothing to accept this time.
    spdlog::debug("control socket: cannot accept a client: {}", uv_strerror(result));
    return;
  }
  auto client = std::make_unique<Client>();
  client->owner = this;
  int status = 0;
  client->pipe = UvHandle<uv_pipe_t>::Make(loop_, status, uv_pipe_init, 0);
  if (!client->pipe) {
    return;
  }
  // Always accepted: a connection left pending stops libuv from accepting any other.
  if (uv_accept(Stream(server_.get()), Stream(client->pipe.get())) != 0) {
    return;
  }
  if (clients_.size() >= limits_.max_clients) {
    std::string why = "busy: ";
    why += std::to_string(clients_.size());
    why += " control clients connected; try again";
    Refuse(client->pipe.get(), why);
    return;  // the pipe closes with `client`
  }
  client->deadline = UvHandle<uv_timer_t>::Make(loop_, status, uv_timer_init);
  if (!client->deadline) {
    return;
  }
  client->pipe->data = client.get();
  client->deadline->data = client.get();
  ArmDeadline(*client, limits_.read_timeout);
  uv_read_start(
      Stream(client->pipe.get()),
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

void ControlServer::Refuse(uv_pipe_t* pipe, const std::string& why) {
  // A fresh socket's buffer takes a short line whole: nothing is queued for it.
  std::string line = ControlErrorReply(why);
  line += "\n";
  uv_buf_t out = uv_buf_init(line.data(), static_cast<unsigned>(line.size()));
  uv_try_write(Stream(pipe), &out, 1);
  DiscardUnread(pipe);
}

void ControlServer::ArmDeadline(Client& client, std::chrono::milliseconds after) {
  uv_timer_start(
      client.deadline.get(),
      [](uv_timer_t* timer) {
        if (auto* late = static_cast<Client*>(timer->data)) {
          // Debug only: a flood of idle clients must not become a flood of log lines.
          spdlog::debug("control socket: dropping a client that {}",
                        late->done ? "does not take its reply" : "sent no whole request");
          late->owner->Finish(*late);
        }
      },
      static_cast<std::uint64_t>(after.count()), 0);
}

void ControlServer::OnRead(Client& client, ssize_t n, const uv_buf_t* buf) {
  if (client.done) {
    return;
  }
  if (n > 0) {
    client.request.append(buf->base, static_cast<std::size_t>(n));
  }
  std::size_t newline = client.request.find('\n');
  if (newline == std::string::npos && n == UV_EOF && !client.request.empty()) {
    newline = client.request.size();  // the client half-closed after a last line without \n
  }
  if (newline == std::string::npos && n >= 0 &&
      client.request.size() <= limits_.max_request_bytes) {
    return;  // more to come
  }
  client.done = true;
  uv_read_stop(Stream(client.pipe.get()));
  uv_timer_stop(client.deadline.get());  // the handler may take its time (a snapshot)
  if (newline == std::string::npos && n < 0) {
    Finish(client);  // hung up without a request
    return;
  }
  if (newline == std::string::npos || newline > limits_.max_request_bytes) {
    std::string why = "bad request: longer than ";
    why += std::to_string(limits_.max_request_bytes);
    why += " bytes";
    Send(client, ControlErrorReply(why));
    return;
  }
  std::string request = client.request.substr(0, newline);
  if (!request.empty() && request.back() == '\r') {
    request.pop_back();
  }
  client.request.clear();
  client.request.shrink_to_fit();
  Handle(client, request);
}

void ControlServer::Handle(Client& client, const std::string& request) {
  // The client may hang up before a late reply: the reply then finds it gone.
  std::weak_ptr<bool> alive = client.alive;
  Client* target = &client;
  Reply reply = [this, alive, target](std::string response) {
    if (!alive.expired()) {
      Send(*target, std::move(response));
    }
  };
  // The handler validates what it reads; this is the last resort for a defect, so that one
  // bad request cannot end the daemon.
  try {
    handler_(request, reply);
  } catch (const std::exception& e) {
    spdlog::error("control request failed: {}", e.what());
    std::string why = "internal error: ";
    why += e.what();
    reply(ControlErrorReply(why));
  } catch (...) {
    spdlog::error("control request failed with an unknown exception");
    reply(ControlErrorReply("internal error"));
  }
}

void ControlServer::Send(Client& client, std::string response) {
  if (client.replied) {
    return;
  }
  client.replied = true;
  if (response.size() > limits_.max_reply_bytes) {
    spdlog::warn("control socket: a reply of {} bytes is over the cap of {}", response.size(),
                 limits_.max_reply_bytes);
    std::string why = "reply too large: ";
    why += std::to_string(response.size());
    why += " bytes, over the control socket's cap of ";
    why += std::to_string(limits_.max_reply_bytes);
    response = ControlErrorReply(why);
  } else if (queued_bytes_ + response.size() > limits_.max_queued_bytes) {
    std::string why = "busy: ";
    why += std::to_string(queued_bytes_);
    why += " bytes of replies wait for other clients; try again";
    response = ControlErrorReply(why);
  }
  auto write = std::make_unique<PendingWrite>();
  write->bytes = std::move(response);
  write->bytes += "\n";
  write->alive = client.alive;
  client.queued = write->bytes.size();
  queued_bytes_ += client.queued;
  Client* target = &client;
  write->done = [target] { target->owner->Finish(*target); };
  write->request.data = write.get();
  uv_buf_t out = uv_buf_init(write->bytes.data(), static_cast<unsigned>(write->bytes.size()));
  const int status =
      uv_write(&write->request, Stream(client.pipe.get()), &out, 1, [](uv_write_t* request, int) {
        std::unique_ptr<PendingWrite> written(static_cast<PendingWrite*>(request->data));
        if (!written->alive.expired()) {
          written->done();
        }
      });
  if (status != 0) {
    Finish(client);
    return;
  }
  write.release();  // libuv's until the callback, which owns it again
  ArmDeadline(client, limits_.write_timeout);
}

void ControlServer::Finish(Client& client) {
  DiscardUnread(client.pipe.get());
  queued_bytes_ -= client.queued;
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
  // MSG_NOSIGNAL: a daemon that closed first must not kill the CLI with SIGPIPE.
  if (::send(fd.get(), line.data(), line.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(line.size()) &&
      errno != EPIPE) {
    return Error{socket_path + ": " + std::strerror(errno)};
  }
  // After EPIPE too: a daemon that refuses a client ("busy") answers and closes before it
  // reads, and its answer is there to read.
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
