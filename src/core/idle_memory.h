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

#include <cstddef>

namespace trainwatch {

// What was asked of the kernel, for the log.
struct IdleMemoryRelease {
  std::size_t mappings = 0;  // file mappings the kernel took the advice for
  std::size_t bytes = 0;     // their size (mapped, not resident)
};

IdleMemoryRelease ReleaseIdleMemory();

}  // namespace trainwatch
