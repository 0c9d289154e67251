#include "core/idle_memory.h"

#include <malloc.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>

namespace trainwatch {
namespace {

#ifndef MADV_PAGEOUT
constexpr int MADV_PAGEOUT = 21;  // Linux 5.4; older headers lack the name
#endif

}  // namespace

IdleMemoryRelease ReleaseIdleMemory() {
  ::malloc_trim(0);
  IdleMemoryRelease release;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    // "start-end perms offset dev inode path": only private file mappings nobody writes to.
    unsigned long long start = 0;
    unsigned long long end = 0;
    char perms[5] = {};
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %4s %*s %*s %*s %n", &start, &end, perms, &path_at) <
            3 ||
        path_at <= 0 || static_cast<std::size_t>(path_at) >= line.size() ||
        line[static_cast<std::size_t>(path_at)] != '/' || perms[1] == 'w' || perms[3] != 'p') {
      continue;
    }
    // EINVAL: a kernel before 5.4, or a locked mapping; either way nothing changes. The address
    // is the kernel's own, from the maps: no pointer to derive it from.
    // NOLINTNEXTLINE(performance-no-int-to-ptr)
    void* const address = reinterpret_cast<void*>(static_cast<std::uintptr_t>(start));
    if (::madvise(address, static_cast<std::size_t>(end - start), MADV_PAGEOUT) == 0) {
      ++release.mappings;
      release.bytes += static_cast<std::size_t>(end - start);
    }
  }
  return release;
}

IdleMemory::IdleMemory(Env& env, std::function<bool()> busy, std::function<void()> release)
    : env_(env), busy_(std::move(busy)), release_(std::move(release)) {
  timer_ = env_.NewTimer([this] {
    if (busy_()) {
      return AfterWork();  // a capture began meanwhile: after it
    }
    env_.RunOnPool(release_, [] {});
  });
}

void IdleMemory::AfterWork() {
  if (timer_) {
    timer_->Start(kDelay, {});
  }
}

}  // namespace trainwatch
