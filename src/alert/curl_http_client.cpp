#include "alert/curl_http_client.h"

#include <spdlog/spdlog.h>

#include <utility>
#include <vector>

namespace trainwatch::alert {

// One POST: what curl reads from and writes to must live as long as the transfer.
struct CurlHttpClient::Transfer {
  const CurlLibrary* curl = nullptr;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  std::string body;
  std::string response;  // its first bytes, for an error message
  char error[CURL_ERROR_SIZE] = {};
  Done done;
  ~Transfer() {
    curl->easy_cleanup(easy);
    curl->slist_free_all(headers);
  }
};

// A socket curl asked to be watched.
struct CurlHttpClient::Socket {
  UvHandle<uv_poll_t> poll;
  int events = 0;  // what curl asked to wait for
};

namespace {

constexpr std::size_t kResponseKept = 512;

std::size_t KeepResponse(char* data, std::size_t size, std::size_t count, void* user) {
  auto* response = static_cast<std::string*>(user);
  const std::size_t bytes = size * count;
  if (response->size() < kResponseKept) {
    response->append(data, std::min(bytes, kResponseKept - response->size()));
  }
  return bytes;  // all of it taken: anything less aborts the transfer
}

}  // namespace

CurlHttpClient::CurlHttpClient(uv_loop_t* loop) : loop_(loop) {
  Result<const CurlLibrary*> loaded = LoadCurl();
  if (!loaded) {
    unavailable_ = loaded.error().message;
    spdlog::error("alerts: {}; no alert can be posted", unavailable_);
    return;
  }
  curl_ = *loaded;
  multi_ = curl_->multi_init();
  int status = 0;
  timer_ = UvHandle<uv_timer_t>::Make(loop_, status, uv_timer_init);
  if (timer_) {
    timer_->data = this;
  }
  curl_->multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &CurlHttpClient::OnSocket);
  curl_->multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
  curl_->multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &CurlHttpClient::OnTimeout);
  curl_->multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
}

CurlHttpClient::~CurlHttpClient() {
  *alive_ = false;
  if (curl_ == nullptr) {
    return;  // never started
  }
  for (auto& [easy, transfer] : transfers_) {
    curl_->multi_remove_handle(multi_, easy);
  }
  transfers_.clear();
  curl_->multi_cleanup(multi_);  // may still tell OnSocket to stop watching: sockets_ is alive
  sockets_.clear();              // their handles closed; freed by the loop
}

void CurlHttpClient::PostJson(const std::string& url, std::string body, Duration timeout,
                              Done done) {
  if (curl_ == nullptr) {
    done({0, unavailable_});
    return;
  }
  auto transfer = std::make_unique<Transfer>();
  transfer->curl = curl_;
  transfer->easy = curl_->easy_init();
  transfer->body = std::move(body);
  transfer->done = std::move(done);
  transfer->headers = curl_->slist_append(nullptr, "Content-Type: application/json");
  CURL* easy = transfer->easy;
  if (easy == nullptr || transfer->headers == nullptr || !timer_) {
    transfer->done({0, "cannot start an HTTP request (out of memory)"});
    return;
  }
  curl_->easy_setopt(easy, CURLOPT_URL, url.c_str());
  curl_->easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_->easy_setopt(easy, CURLOPT_HTTPHEADER, transfer->headers);
  curl_->easy_setopt(easy, CURLOPT_POSTFIELDS, transfer->body.data());
  curl_->easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(transfer->body.size()));
  curl_->easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_->easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM for name lookups
  curl_->easy_setopt(easy, CURLOPT_USERAGENT, "trainwatch/" TRAINWATCH_VERSION);
  curl_->easy_setopt(easy, CURLOPT_ERRORBUFFER, transfer->error);
  curl_->easy_setopt(easy, CURLOPT_WRITEFUNCTION, &KeepResponse);
  curl_->easy_setopt(easy, CURLOPT_WRITEDATA, &transfer->response);
  if (const CURLMcode added = curl_->multi_add_handle(multi_, easy); added != CURLM_OK) {
    transfer->done({0, curl_->multi_strerror(added)});
    return;
  }
  transfers_.emplace(easy, std::move(transfer));
}

int CurlHttpClient::OnSocket(CURL* /*easy*/, curl_socket_t fd, int what, void* client,
                             void* /*socket*/) {
  auto* self = static_cast<CurlHttpClient*>(client);
  if (what == CURL_POLL_REMOVE) {
    self->sockets_.erase(fd);  // stops watching it and closes the handle
    return 0;
  }
  std::unique_ptr<Socket>& socket = self->sockets_[fd];
  if (!socket) {
    socket = std::make_unique<Socket>();
    int status = 0;
    socket->poll = UvHandle<uv_poll_t>::Make(self->loop_, status, uv_poll_init_socket, fd);
    if (!socket->poll) {
      spdlog::error("HTTP: cannot watch a socket: {}", uv_strerror(status));
      self->sockets_.erase(fd);
      return -1;  // curl fails the transfer
    }
    socket->poll->data = self;
  }
  socket->events = 0;
  if ((what & CURL_POLL_IN) != 0) {
    socket->events |= UV_READABLE;
  }
  if ((what & CURL_POLL_OUT) != 0) {
    socket->events |= UV_WRITABLE;
  }
  if (const int started = uv_poll_start(socket->poll.get(), socket->events, &OnReady);
      started != 0) {
    spdlog::error("HTTP: cannot watch a socket: {}", uv_strerror(started));
    self->sockets_.erase(fd);
    return -1;
  }
  return 0;
}

void CurlHttpClient::OnReady(uv_poll_t* poll, int status, int ready) {
  auto* owner = static_cast<CurlHttpClient*>(poll->data);
  if (owner == nullptr) {
    return;  // closed meanwhile
  }
  int flags = 0;
  if (status < 0) {
    flags = CURL_CSELECT_ERR;
  }
  if ((ready & UV_READABLE) != 0) {
    flags |= CURL_CSELECT_IN;
  }
  if ((ready & UV_WRITABLE) != 0) {
    flags |= CURL_CSELECT_OUT;
  }
  curl_socket_t fd = CURL_SOCKET_BAD;
  uv_fileno(reinterpret_cast<uv_handle_t*>(poll), &fd);
  const std::shared_ptr<bool> alive = owner->alive_;
  owner->Act(fd, flags);
  if (!*alive || status >= 0) {
    return;
  }
  // libuv stopped the poll on the error; if curl still wants the socket, watch it again, or
  // the transfer would wait for its timeout.
  if (const auto it = owner->sockets_.find(fd); it != owner->sockets_.end() &&
                                                it->second->poll.get() == poll &&
                                                uv_is_active(it->second->poll.base()) == 0) {
    uv_poll_start(poll, it->second->events, &OnReady);
  }
}

int CurlHttpClient::OnTimeout(CURLM* /*multi*/, long timeout_ms, void* client) {
  auto* self = static_cast<CurlHttpClient*>(client);
  if (!self->timer_) {
    return 0;
  }
  if (timeout_ms < 0) {
    uv_timer_stop(self->timer_.get());
    return 0;
  }
  // Even a 0 ms timeout runs from the loop, never from inside curl's own call.
  uv_timer_start(
      self->timer_.get(),
      [](uv_timer_t* timer) {
        if (auto* owner = static_cast<CurlHttpClient*>(timer->data)) {
          owner->Act(CURL_SOCKET_TIMEOUT, 0);
        }
      },
      static_cast<std::uint64_t>(timeout_ms), 0);
  return 0;
}

void CurlHttpClient::Act(curl_socket_t fd, int events) {
  int running = 0;
  curl_->multi_socket_action(multi_, fd, events, &running);
  FinishDone();
}

void CurlHttpClient::FinishDone() {
  // Collected first: a callback may start the next request.
  std::vector<std::pair<std::unique_ptr<Transfer>, HttpResult>> finished;
  int left = 0;
  while (CURLMsg* message = curl_->multi_info_read(multi_, &left)) {
    if (message->msg != CURLMSG_DONE) {
      continue;
    }
    const auto it = transfers_.find(message->easy_handle);
    if (it == transfers_.end()) {
      continue;
    }
    std::unique_ptr<Transfer> transfer = std::move(it->second);
    transfers_.erase(it);
    HttpResult result;
    curl_->easy_getinfo(transfer->easy, CURLINFO_RESPONSE_CODE, &result.status);
    const CURLcode code = message->data.result;
    if (code != CURLE_OK) {
      result.error = transfer->error[0] != '\0' ? transfer->error : curl_->easy_strerror(code);
    } else if (result.status < 200 || result.status > 299) {
      result.error = "HTTP " + std::to_string(result.status) +
                     (transfer->response.empty() ? "" : ": " + transfer->response);
    }
    curl_->multi_remove_handle(multi_, transfer->easy);
    finished.emplace_back(std::move(transfer), std::move(result));
  }
  const std::shared_ptr<bool> alive = alive_;
  for (auto& [transfer, result] : finished) {
    if (!*alive) {
      return;  // a callback destroyed the client: the others are never told
    }
    transfer->done(result);
  }
}

}  // namespace trainwatch::alert
