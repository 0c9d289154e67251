// Handing back what start-up, a reload or a capture used and the daemon does not need while it
// waits: malloc's free pages (malloc_trim), and the code and read-only data pages of the binary
// and its libraries that only that work touched (madvise MADV_PAGEOUT on the process's own
// file mappings: config parsing, rule loading, YAML, CLI11, a capture's libarchive). Measured
// on the idle daemon with 100 files: 10.5 MiB resident before, 5-6 MiB once what the loop
// touches again has faulted back in. What is paged out stays on disk, in the binary and the
// libraries, and comes back on its next use (a reload, a capture) at the price of a few page
// faults; pages shared with other processes (libc) are never taken, and pages a process has
// written (relocations) are not file pages. A kernel without MADV_PAGEOUT (before 5.4) says
// EINVAL, and only malloc_trim happens. Blocking (a few ms): run it on the thread pool.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>

#include "core/env.h"

namespace trainwatch {

// What was asked of the kernel, for the log.
struct IdleMemoryRelease {
  std::size_t mappings = 0;  // file mappings the kernel took the advice for
  std::size_t bytes = 0;     // their size (mapped, not resident)
};

IdleMemoryRelease ReleaseIdleMemory();

// When to release: kDelay after the last piece of work (start-up, a reload, a capture) has
// settled — by then the writer scan, the first rescans and a capture's hooks are done — on
// the thread pool; postponed while `busy` says a capture runs. Loop thread only.
class IdleMemory {
 public:
  static constexpr std::chrono::milliseconds kDelay{10000};
  // `release`: what runs on the pool (ReleaseIdleMemory and a log line; tests count).
  IdleMemory(Env& env, std::function<bool()> busy, std::function<void()> release);
  // Work just settled: release kDelay from now (a later call postpones it).
  void AfterWork();
  // No release from now on (the daemon is stopping).
  void Stop() { timer_.reset(); }

 private:
  Env& env_;
  std::function<bool()> busy_;
  std::function<void()> release_;
  std::unique_ptr<LoopTimer> timer_;
};

}  // namespace trainwatch
