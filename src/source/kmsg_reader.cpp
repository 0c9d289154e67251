#include "source/kmsg_reader.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace trainwatch::source {

// "PRI,SEQ,MICROS,FLAGS[,...];MESSAGE" (Documentation/ABI/testing/dev-kmsg); continuation
// lines (" KEY=value") after the first are metadata, not text.
std::string KmsgRecordToLine(std::string_view record) {
  const std::size_t semicolon = record.find(';');
  if (semicolon == std::string_view::npos) {
    return std::string(record);
  }
  std::string_view header = record.substr(0, semicolon);
  std::string_view message = record.substr(semicolon + 1);
  message = message.substr(0, message.find('\n'));
  unsigned long long micros = 0;
  const std::size_t first = header.find(',');
  const std::size_t second = first == std::string_view::npos ? first : header.find(',', first + 1);
  if (second != std::string_view::npos) {
    std::sscanf(std::string(header.substr(second + 1)).c_str(), "%llu", &micros);
  }
  char stamp[40];
  std::snprintf(stamp, sizeof stamp, "[%5llu.%06llu] ", micros / 1000000, micros % 1000000);
  std::string line = stamp;
  // The kernel escapes unprintable bytes as \xNN; keep them escaped.
  line.append(message);
  return line;
}

bool KmsgReader::Start(uv_loop_t* loop, const std::string& device, Sink sink) {
  device_ = device;
  sink_ = std::move(sink);
  fd_ = UniqueFd(::open(device.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd_.get() < 0) {
    spdlog::warn("kmsg: cannot read {} ({}); kernel messages will not be watched", device,
                 std::strerror(errno));
    return false;
  }
  ::lseek(fd_.get(), 0, SEEK_END);  // from now on; /dev/kmsg supports SEEK_END
  int status = 0;
  poll_ = UvHandle<uv_poll_t>::Make(loop, status, uv_poll_init, fd_.get());
  if (!poll_) {
    spdlog::warn("kmsg: cannot poll {} ({}); kernel messages will not be watched", device,
                 uv_strerror(status));
    fd_ = UniqueFd();
    return false;
  }
  poll_->data = this;
  uv_poll_start(poll_.get(), UV_READABLE, [](uv_poll_t* handle, int result, int) {
    if (auto* self = static_cast<KmsgReader*>(handle->data); self != nullptr && result == 0) {
      self->OnReadable();
    }
  });
  spdlog::info("kmsg: following {}", device);
  return true;
}

void KmsgReader::Stop() {
  poll_.Reset();
  fd_ = UniqueFd();
}

void KmsgReader::OnReadable() {
  char record[8192];  // one record per read; the kernel's limit is below this
  for (int budget = 1024; budget > 0; --budget) {
    const ssize_t n = ::read(fd_.get(), record, sizeof record);
    if (n < 0 && errno == EPIPE) {
      continue;  // older records were overwritten before we read them; go on from here
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n == 0) {
      // End of file: not something /dev/kmsg does, but a stand-in device (a FIFO whose writer
      // left) would otherwise wake the loop forever.
      spdlog::warn("kmsg: {} ended; kernel messages are no longer watched", device_);
      Stop();
      return;
    }
    if (n < 0) {
      break;
    }
    const std::string line =
        KmsgRecordToLine(std::string_view(record, static_cast<std::size_t>(n))) + "\n";
    std::string_view rest = line;
    while (!rest.empty()) {
      std::span<char> space = framer_.WritableSpace();
      const std::size_t take = std::min(space.size(), rest.size());
      std::memcpy(space.data(), rest.data(), take);
      framer_.Commit(take);
      rest.remove_prefix(take);
      while (const source::LineBatch* batch = framer_.NextBatch()) {
        sink_(*batch);
      }
    }
  }
  framer_.Release();
}

}  // namespace trainwatch::source
