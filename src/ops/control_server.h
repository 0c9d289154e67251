// ControlServer: the daemon's unix socket (state_dir/control.sock, mode 0600: it can start
// captures). A client sends one request line and gets one response line, then the
// connection closes. The handler runs on the loop. Loop thread only.
//
// Nothing a client does can stop the daemon or exhaust it (ControlLimits): a client has
// read_timeout to send its whole request line and write_timeout to take its reply, else it
// is dropped; a request line longer than max_request_bytes gets an error reply; beyond
// max_clients connections a new one is answered {"error": "busy ..."} and closed (the server
// always accepts, so it never stops listening and holds at most max_clients descriptors); a
// reply larger than max_reply_bytes is replaced by an error, and one that would take the
// bytes held for all clients past max_queued_bytes by "busy". A handler that throws gets its
// client an error reply and a line in the log.
#pragma once

#include <uv.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <string>

#include "core/result.h"
#include "core/uv_handle.h"

namespace trainwatch::ops {

struct ControlLimits {
  std::size_t max_clients = 64;
  std::size_t max_request_bytes = 64 * 1024;
  std::size_t max_reply_bytes = 16 * 1024 * 1024;   // bytes held for one client
  std::size_t max_queued_bytes = 32 * 1024 * 1024;  // bytes held for all clients together
  std::chrono::milliseconds read_timeout{3000};     // connect to a whole request line
  std::chrono::milliseconds write_timeout{10000};   // reply sent to reply taken
};

class ControlServer {
 public:
  // Answers `request` by calling `reply` once, now or later (a snapshot replies when its
  // bundle is written).
  using Reply = std::function<void(std::string response)>;
  using Handler = std::function<void(const std::string& request, Reply reply)>;
  Status Start(uv_loop_t* loop, const std::string& path, Handler handler,
               ControlLimits limits = {});
  // `remove_socket`: false when the path is no longer ours (another daemon took the state_dir
  // and listens there now).
  void Stop(bool remove_socket = true);

  // Connections held now, and the reply bytes held for them (what tests check).
  std::size_t clients() const { return clients_.size(); }
  std::size_t queued_bytes() const { return queued_bytes_; }

 private:
  struct Client {
    ControlServer* owner = nullptr;
    std::shared_ptr<bool> alive = std::make_shared<bool>(true);  // expires with the client
    UvHandle<uv_pipe_t> pipe;
    UvHandle<uv_timer_t> deadline;  // read_timeout, then write_timeout
    std::string request;
    std::size_t queued = 0;  // reply bytes counted in queued_bytes_
    bool done = false;       // the request line is complete (or refused)
    bool replied = false;    // Send ran: a second reply is ignored
  };
  void OnConnection(int result);
  void Refuse(uv_pipe_t* pipe, const std::string& why);
  void OnRead(Client& client, ssize_t n, const uv_buf_t* buf);
  void Handle(Client& client, const std::string& request);
  void Finish(Client& client);
  void Send(Client& client, std::string response);
  void ArmDeadline(Client& client, std::chrono::milliseconds after);

  uv_loop_t* loop_ = nullptr;
  std::string path_;
  Handler handler_;
  ControlLimits limits_;
  UvHandle<uv_pipe_t> server_;
  std::list<std::unique_ptr<Client>> clients_;
  std::size_t queued_bytes_ = 0;
  char buffer_[4096];
};

// Client side (the CLI, not the loop): sends `request`, returns the response line; gives up
// after `timeout_seconds`. A daemon that refused it ("busy") may close before reading: the
// reply is read all the same, and no SIGPIPE reaches the caller.
Result<std::string> ControlRequest(const std::string& socket_path, const std::string& request,
                                   int timeout_seconds = 10);

}  // namespace trainwatch::ops
