// MetricsTextfile: the Prometheus textfile (for node_exporter's textfile collector), rewritten
// atomically (mode 0644) when something it shows moved, and at least every kHeartbeat even
// when nothing did: its mtime (node_textfile_mtime_seconds) and the written-at gauge in it are
// the liveness signal, so an idle healthy daemon must not look like a stopped one. Called on
// the daemon's tick: an idle daemon wakes no more often for it, and renders nothing while a
// cheap activity number stays the same. A failure to write is logged once per reason and
// retried. Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace trainwatch::ops {

class MetricsTextfile {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;
  // The longest the file goes unwritten while the daemon runs (the guide: alert past 3 min).
  static constexpr std::chrono::seconds kHeartbeat{60};

  // A (re)loaded config: writes to `path` every `interval` when `enabled`. A textfile it no
  // longer names is removed: the old one would be exported forever, and beside the new one in
  // node_exporter's directory every series would be there twice. The next Tick writes.
  void Configure(bool enabled, std::string path, std::chrono::milliseconds interval);
  // Writes when `interval` has passed since the last check and `activity` moved (it moves
  // whenever anything the file shows may have; `render` makes its text), or kHeartbeat has
  // passed since the last write.
  void Tick(SteadyTime now, std::uint64_t activity, const std::function<std::string()>& render);
  // Writes now (the final counts at a stop).
  void Write(std::uint64_t activity, const std::function<std::string()>& render);

 private:
  // True when it wrote (or tried to).
  bool WriteIfMoved(std::uint64_t activity, const std::function<std::string()>& render,
                    bool heartbeat);

  bool enabled_ = false;
  std::string path_;  // configured
  std::chrono::milliseconds interval_{5000};
  std::string written_path_;    // the textfile last written
  std::string text_;            // what it holds
  std::uint64_t activity_ = 0;  // the activity when it was written
  std::string error_;           // the last failure, logged once
  SteadyTime next_{};
  SteadyTime written_at_{};  // the last write, or the last try at one
};

}  // namespace trainwatch::ops
