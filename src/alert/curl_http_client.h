// CurlHttpClient: HTTP through libcurl's multi interface (loaded at run time:
// alert/curl_library.h) on the daemon's libuv loop, as
// libcurl documents it (its multi-uv example): curl says which sockets to watch
// (CURLMOPT_SOCKETFUNCTION, a uv_poll_t each) and when to time out (CURLMOPT_TIMERFUNCTION,
// one uv_timer_t); libuv says when they are ready (curl_multi_socket_action). Transfers in
// flight are abandoned when the client is destroyed (their callbacks never run). Loop thread
// only.
#pragma once

#include <curl/curl.h>
#include <uv.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "alert/curl_library.h"
#include "alert/http_client.h"
#include "core/uv_handle.h"

namespace trainwatch::alert {

class CurlHttpClient : public HttpClient {
 public:
  explicit CurlHttpClient(uv_loop_t* loop);
  ~CurlHttpClient() override;
  CurlHttpClient(const CurlHttpClient&) = delete;
  CurlHttpClient& operator=(const CurlHttpClient&) = delete;

  void PostJson(const std::string& url, std::string body, Duration timeout, Done done) override;

  struct Transfer;
  struct Socket;

 private:
  static int OnSocket(CURL* easy, curl_socket_t fd, int what, void* client, void* socket);
  static int OnTimeout(CURLM* multi, long timeout_ms, void* client);
  static void OnReady(uv_poll_t* poll, int status, int ready);
  void Act(curl_socket_t fd, int events);
  void FinishDone();

  uv_loop_t* loop_;
  const CurlLibrary* curl_ = nullptr;  // null: libcurl could not be loaded
  std::string unavailable_;            // why not
  CURLM* multi_ = nullptr;
  UvHandle<uv_timer_t> timer_;
  std::map<CURL*, std::unique_ptr<Transfer>> transfers_;
  std::map<curl_socket_t, std::unique_ptr<Socket>> sockets_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // false once destroyed
};

}  // namespace trainwatch::alert
