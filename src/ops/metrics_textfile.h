// MetricsTextfile: the Prometheus textfile (for node_exporter's textfile collector), rewritten
// atomically (mode 0644) when something it shows moved. Called on the daemon's tick: an idle
// daemon wakes no more often for it, and renders nothing while a cheap activity number stays
// the same. A failure to write is logged once per reason and retried. Loop thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace trainwatch::ops {

class MetricsTextfile {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;

  // A (re)loaded config: writes to `path` every `interval` when `enabled`. A textfile it no
  // longer names is removed: the old one would be exported forever, and beside the new one in
  // node_exporter's directory every series would be there twice. The next Tick writes.
  void Configure(bool enabled, std::string path, std::chrono::milliseconds interval);
  // Writes when `interval` has passed since the last check. `activity` moves whenever
  // anything the file shows may have; `render` makes its text.
  void Tick(SteadyTime now, std::uint64_t activity, const std::function<std::string()>& render);
  // Writes now (the final counts at a stop).
  void Write(std::uint64_t activity, const std::function<std::string()>& render);

 private:
  bool enabled_ = false;
  std::string path_;  // configured
  std::chrono::milliseconds interval_{5000};
  std::string written_path_;    // the textfile last written
  std::string text_;            // what it holds
  std::uint64_t activity_ = 0;  // the activity when it was written
  std::string error_;           // the last failure, logged once
  SteadyTime next_{};
};

}  // namespace trainwatch::ops
