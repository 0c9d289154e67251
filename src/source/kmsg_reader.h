// KmsgReader: follows the kernel log through /dev/kmsg from its current end (old messages
// were the previous boot's business or another incident's), turning each record into a
// dmesg-style line ("[  123.456789] message") for the kmsg rules. Where /dev/kmsg cannot be
// read (most containers) it says so once and stays idle. Loop thread only.
#pragma once

#include <uv.h>

#include <functional>
#include <string>
#include <string_view>

#include "core/unique_fd.h"
#include "core/uv_handle.h"
#include "source/line_framer.h"

namespace trainwatch::source {

// One /dev/kmsg record ("PRI,SEQ,MICROS,FLAGS;MESSAGE\n KEY=value...") -> its dmesg-style
// line, without '\n'. A record without ';' passes through as it is. Pure; any thread.
std::string KmsgRecordToLine(std::string_view record);

class KmsgReader {
 public:
  using Sink = std::function<void(const source::LineBatch& batch)>;
  // Opens `device`; on failure logs one warning and returns false.
  bool Start(uv_loop_t* loop, const std::string& device, Sink sink);
  void Stop();
  bool running() const { return static_cast<bool>(poll_); }

 private:
  void OnReadable();

  UniqueFd fd_;
  UvHandle<uv_poll_t> poll_;
  source::LineFramer framer_{source::kDefaultMaxLineBytes, 64 * 1024};
  Sink sink_;
  std::string device_;
};

}  // namespace trainwatch::source
