// HttpClient: POSTs on the event loop, never blocking it. The daemon's is CurlHttpClient
// (libcurl's multi interface driven by libuv); tests give a fake. Loop thread only.
#pragma once

#include <functional>
#include <string>

#include "core/quantity.h"

namespace trainwatch::alert {

struct HttpResult {
  long status = 0;    // the HTTP status; 0 when no response came
  std::string error;  // empty on a 2xx; else why not (curl's words, or the status and body)
};

class HttpClient {
 public:
  using Done = std::function<void(const HttpResult& result)>;
  virtual ~HttpClient() = default;
  // POSTs `body` as application/json to `url`; `done` runs on the loop once it answered,
  // failed or took `timeout`. Never runs `done` after the client is destroyed.
  virtual void PostJson(const std::string& url, std::string body, Duration timeout, Done done) = 0;
};

}  // namespace trainwatch::alert
