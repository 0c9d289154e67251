#include "ops/loop_lag.h"

#include <algorithm>

namespace trainwatch::ops {

void LoopLag::OnTimer(SteadyTime now, std::chrono::milliseconds period) {
  const auto late =
      last_ ? std::max(std::chrono::duration_cast<std::chrono::milliseconds>(now - *last_ - period),
                       std::chrono::milliseconds(0))
            : std::chrono::milliseconds(0);
  last_ = now;
  if (now - window_start_ >= kWindow) {  // a new window (the first firing's too)
    // The one under way becomes the one before, unless it ended a window or more ago.
    worst_previous_ = now - window_start_ < 2 * kWindow ? worst_ : std::chrono::milliseconds(0);
    worst_ = std::chrono::milliseconds(0);
    window_start_ = now;
  }
  worst_ = std::max(worst_, late);  // a firing after a long silence counts that silence
}

std::chrono::milliseconds LoopLag::WorstRecently(SteadyTime now) const {
  if (!last_) {
    return std::chrono::milliseconds(0);
  }
  const auto age = now - window_start_;
  if (age >= 2 * kWindow) {
    return std::chrono::milliseconds(0);
  }
  if (age >= kWindow) {
    return worst_;  // the window under way has become the one before
  }
  return std::max(worst_, worst_previous_);
}

}  // namespace trainwatch::ops
