// Stopwatch: how long a piece of real work took (a collector's run, a bundle's write), for the
// manifest and the metrics. Measurement, not logic: nothing is decided on it, it runs on the
// worker threads, and a fake clock would only make it say 0; so it, alone, reads the steady
// clock directly. Logic takes its time from the Env (core/env.h). Any thread.
#pragma once

#include <chrono>

namespace trainwatch {

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace trainwatch
