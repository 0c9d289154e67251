#include "ops/loop_lag.h"

#include <algorithm>

namespace trainwatch::ops {

void LoopLag::OnTimer(SteadyTime now, std::chrono::milliseconds period) {
  if (!last_ || now - window_start_ >= 2 * kWindow) {
    window_start_ = now;  // the first firing, or a silence longer than both windows
    worst_previous_ =
        last_ ? std::chrono::duration_cast<std::chrono::milliseconds>(now - *last_ - period)
              : std::chrono::milliseconds(0);
    worst_ = std::chrono::milliseconds(0);
    last_ = now;
    return;
  }
  if (now - window_start_ >= kWindow) {
    worst_previous_ = worst_;
    worst_ = std::chrono::milliseconds(0);
    window_start_ = now;
  }
  const auto late = std::chrono::duration_cast<std::chrono::milliseconds>(now - *last_ - period);
  worst_ = std::max(worst_, late);
  last_ = now;
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
