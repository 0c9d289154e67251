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

namespace trainwatch::app {

class ControlServer {
 public:
  using Handler = std::function<std::string(const std::string& request)>;
  Status Start(uv_loop_t* loop, const std::string& path, Handler handler);
  void Stop();

 private:
  struct Client {
    ControlServer* owner = nullptr;
    UvHandle<uv_pipe_t> pipe;
    std::string request;
    std::string response;
    uv_write_t write{};
    bool done = false;
  };
  void OnConnection();
  void OnRead(Client& client, ssize_t n, const uv_buf_t* buf);
  void Finish(Client& client);

  uv_loop_t* loop_ = nullptr;
  std::string path_;
  Handler handler_;
  UvHandle<uv_pipe_t> server_;
  std::list<std::unique_ptr<Client>> clients_;
  char buffer_[4096];
};

// Client side (the CLI, not the loop): sends `request`, returns the response line.
Result<std::string> ControlRequest(const std::string& socket_path, const std::string& request);

}  // namespace trainwatch::app
