// How late the event loop runs: a timer meant to fire every period tells each firing, and the
// worst lateness over the last minute is kept. A loop that is late answers `trainwatch status`
// late and reads lines late (the watcher's health, ops/watcher_health.h). Loop thread only.
#pragma once

#include <chrono>
#include <optional>

#include "core/env.h"

namespace trainwatch::ops {

class LoopLag {
 public:
  static constexpr std::chrono::seconds kWindow{60};

  // A firing of a timer set to fire every `period`, at `now`.
  void OnTimer(SteadyTime now, std::chrono::milliseconds period);
  // The worst lateness seen over the last kWindow to 2 x kWindow; a firing after a longer
  // silence counts that silence.
  std::chrono::milliseconds WorstRecently(SteadyTime now) const;

 private:
  std::optional<SteadyTime> last_;
  SteadyTime window_start_{};
  std::chrono::milliseconds worst_{0};           // in the window under way
  std::chrono::milliseconds worst_previous_{0};  // in the one before it
};

}  // namespace trainwatch::ops
