// ControlServer: the daemon's unix socket (state_dir/control.sock, mode 0600: it can start
// captures). A client sends one request line and gets one response line, then the
// connection closes. The handler runs on the loop. Loop thread only.
#pragma once

#include <uv.h>

#include <functional>
#include <list>
#include <memory>
#include <string>

#include "core/result.h"
#include "core/uv_handle.h"

namespace trainwatch::ops {

class ControlServer {
 public:
  // Answers `request` by calling `reply` once, now or later (a snapshot replies when its
  // bundle is written).
  using Reply = std::function<void(std::string response)>;
  using Handler = std::function<void(const std::string& request, Reply reply)>;
  Status Start(uv_loop_t* loop, const std::string& path, Handler handler);
  // `remove_socket`: false when the path is no longer ours (another daemon took the state_dir
  // and listens there now).
  void Stop(bool remove_socket = true);

 private:
  struct Client {
    ControlServer* owner = nullptr;
    std::shared_ptr<bool> alive = std::make_shared<bool>(true);  // false once finished
    UvHandle<uv_pipe_t> pipe;
    std::string request;
    std::string response;
    uv_write_t write{};
    bool done = false;
  };
  void OnConnection();
  void OnRead(Client& client, ssize_t n, const uv_buf_t* buf);
  void Finish(Client& client);
  void Send(Client& client, std::string response);

  uv_loop_t* loop_ = nullptr;
  std::string path_;
  Handler handler_;
  UvHandle<uv_pipe_t> server_;
  std::list<std::unique_ptr<Client>> clients_;
  char buffer_[4096];
};

// Client side (the CLI, not the loop): sends `request`, returns the response line; gives up
// after `timeout_seconds`.
Result<std::string> ControlRequest(const std::string& socket_path, const std::string& request,
                                   int timeout_seconds = 10);

}  // namespace trainwatch::ops
