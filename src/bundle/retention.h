// Retention: keeps the bundles directory within its limits (count, total bytes, free space on
// the disk) by deleting the oldest finished bundles before a new one is written. Plain
// functions over the directory as it is now; the daemon's bundle worker thread calls them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace trainwatch::bundle {

struct RetentionPolicy {
  std::size_t max_count = 20;
  std::uint64_t max_bytes = 2ull << 30;
  // Space to leave free on the disk; the stricter of the two forms applies.
  std::uint64_t min_free_bytes = 0;
  double min_free_percent = 0;  // of the file system's total size
};

struct BundleFile {
  std::string path;
  std::string name;
  std::uint64_t bytes = 0;
};

// The finished bundles in dir (regular *.tar.zst files, not hidden, so never a .partial),
// oldest first: names begin with the UTC time, so name order is time order.
std::vector<BundleFile> ListBundles(const std::string& dir);

// Free bytes on dir's file system for this process (statvfs f_bavail * f_frsize); 0 when it
// cannot be read.
std::uint64_t FreeBytes(const std::string& dir);
// The reserve `policy` asks for on dir's file system: max(min_free_bytes, min_free_percent of
// the total).
std::uint64_t RequiredFree(const std::string& dir, const RetentionPolicy& policy);

// A storm: the run of bundles, ending with the newest, in which each bundle was opened (the
// time its name begins with) at most kStormGapSeconds after the one before it. A crash that
// repeats (cooldown 0, a loop of restarts) writes one; its first bundle holds the root cause.
constexpr std::int64_t kStormGapSeconds = 10 * 60;
// The index in `bundles` (oldest first, as ListBundles returns them) of the newest storm's
// first bundle; the newest bundle itself when the one before is older than the gap. 0 when
// empty.
std::size_t StormStart(const std::vector<BundleFile>& bundles);

// Deletes bundles until, counting one more bundle of `incoming_bytes`, there are at most
// max_count bundles and max_bytes in all, and the reserve stays free: the oldest first, but the
// first bundle of the newest storm (see StormStart) last, so a storm never deletes its own root
// cause while an echo of it is left to delete. May delete every bundle. Free space is re-read after
// each deletion (a bundle held open elsewhere frees nothing yet). Returns the deleted paths, oldest
// first.
// A bundle named `replacing` is left alone and not counted: the incoming one replaces it (a
// capture's early bundle).
std::vector<std::string> MakeRoom(const std::string& dir, const RetentionPolicy& policy,
                                  std::uint64_t incoming_bytes, const std::string& replacing = {});

// Whether a bundle of `bytes` fits once MakeRoom has run (deleting nothing itself): within
// max_bytes on its own, and the reserve left free even if every older bundle goes. False: the
// caller writes a reduced bundle.
bool Fits(const std::string& dir, const RetentionPolicy& policy, std::uint64_t bytes);

}  // namespace trainwatch::bundle
