#include "ops/metrics_textfile.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/atomic_file.h"

namespace trainwatch::ops {

void MetricsTextfile::Configure(bool enabled, std::string path,
                                std::chrono::milliseconds interval) {
  enabled_ = enabled && !path.empty();
  path_ = std::move(path);
  interval_ = interval;
  if (!written_path_.empty() && (!enabled_ || written_path_ != path_)) {
    if (::unlink(written_path_.c_str()) != 0 && errno != ENOENT) {
      spdlog::warn("cannot remove the old metrics file {}: {}", written_path_,
                   std::strerror(errno));
    }
    written_path_.clear();
  }
  next_ = {};  // at the next tick
}

void MetricsTextfile::Tick(SteadyTime now, std::uint64_t activity,
                           const std::function<std::string()>& render) {
  if (now >= next_) {
    next_ = now + interval_;
    if (WriteIfMoved(activity, render, now - written_at_ >= kHeartbeat)) {
      written_at_ = now;
    }
  }
}

void MetricsTextfile::Write(std::uint64_t activity, const std::function<std::string()>& render) {
  WriteIfMoved(activity, render, false);
}

bool MetricsTextfile::WriteIfMoved(std::uint64_t activity,
                                   const std::function<std::string()>& render, bool heartbeat) {
  if (!enabled_) {
    return false;
  }
  // A few kilobytes to a local file, like the offsets: not worth a thread-pool round trip. An
  // idle daemon's numbers do not change: neither rendering nor rewriting them again would be
  // its main cost (unless someone removed the file).
  const bool same_file = written_path_ == path_ && ::access(path_.c_str(), F_OK) == 0;
  if (same_file && activity == activity_ && !heartbeat) {
    return false;
  }
  std::string text = render();
  if (same_file && text == text_ && !heartbeat) {
    activity_ = activity;
    return false;
  }
  const Status written = WriteFileAtomically(path_, text, 0644);
  if (!written && written.error().message != error_) {
    spdlog::error("cannot write the metrics file: {} (retried every {} ms)",
                  written.error().message, interval_.count());
  } else if (written && !error_.empty()) {
    spdlog::info("metrics file {} written again", path_);
  }
  error_ = written ? "" : written.error().message;
  if (written) {
    written_path_ = path_;
    text_ = std::move(text);
    activity_ = activity;
  }
  return true;
}

}  // namespace trainwatch::ops
