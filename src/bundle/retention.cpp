#include "bundle/retention.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <memory>
#include <optional>
#include <string_view>

#include "core/directory.h"

namespace trainwatch::bundle {
namespace {

constexpr std::string_view kSuffix = ".tar.zst";

struct Space {
  std::uint64_t free = 0;
  std::uint64_t total = 0;
};
std::optional<Space> ReadSpace(const std::string& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) {
    return std::nullopt;
  }
  return Space{static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize,
               static_cast<std::uint64_t>(st.f_blocks) * st.f_frsize};
}

std::uint64_t Reserve(const Space& space, const RetentionPolicy& policy) {
  const double percent = std::clamp(policy.min_free_percent, 0.0, 100.0);
  const auto by_percent =
      static_cast<std::uint64_t>(static_cast<double>(space.total) * percent / 100);
  return std::max(policy.min_free_bytes, by_percent);
}

// Whether `count` bundles of `bytes` in all, plus one of `incoming`, are within the policy on
// a disk with `space` (unknown space: the free-space rule cannot be checked, so it holds; a
// failing statvfs must not wipe every bundle).
bool WithinPolicy(std::size_t count, std::uint64_t bytes, std::uint64_t incoming,
                  const std::optional<Space>& space, const RetentionPolicy& policy) {
  if (count + 1 > policy.max_count || bytes + incoming > policy.max_bytes) {
    return false;
  }
  return !space || (space->free >= incoming && space->free - incoming >= Reserve(*space, policy));
}

// The UTC time a bundle's name begins with ("20261121T030000Z_..."), in seconds since the
// epoch; nullopt for a name that does not begin with one.
std::optional<std::int64_t> OpenedSeconds(std::string_view name) {
  std::tm tm{};
  if (name.size() < 16 || name[8] != 'T' || name[15] != 'Z') {
    return std::nullopt;
  }
  const std::string stamp(name.substr(0, 16));
  const char* end = ::strptime(stamp.c_str(), "%Y%m%dT%H%M%SZ", &tm);
  if (end == nullptr || *end != '\0') {
    return std::nullopt;
  }
  return static_cast<std::int64_t>(::timegm(&tm));
}

}  // namespace

std::size_t StormStart(const std::vector<BundleFile>& bundles) {
  if (bundles.empty()) {
    return 0;
  }
  std::size_t start = bundles.size() - 1;
  while (start > 0) {
    const auto later = OpenedSeconds(bundles[start].name);
    const auto earlier = OpenedSeconds(bundles[start - 1].name);
    if (!later || !earlier || *later - *earlier > kStormGapSeconds) {
      break;
    }
    --start;
  }
  return start;
}

std::vector<BundleFile> ListBundles(const std::string& dir) {
  std::vector<BundleFile> bundles;
  DirPtr d(::opendir(dir.c_str()));
  if (d == nullptr) {
    return bundles;
  }
  while (const dirent* e = ::readdir(d.get())) {
    const std::string_view name = e->d_name;
    struct stat st {};
    if (name.front() == '.' || name.size() <= kSuffix.size() || !name.ends_with(kSuffix) ||
        ::fstatat(::dirfd(d.get()), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode)) {
      continue;
    }
    bundles.push_back({dir + "/" + e->d_name, e->d_name, static_cast<std::uint64_t>(st.st_size)});
  }
  std::sort(bundles.begin(), bundles.end(),
            [](const BundleFile& a, const BundleFile& b) { return a.name < b.name; });
  return bundles;
}

std::uint64_t FreeBytes(const std::string& dir) {
  const std::optional<Space> space = ReadSpace(dir);
  return space ? space->free : 0;
}

std::uint64_t RequiredFree(const std::string& dir, const RetentionPolicy& policy) {
  const std::optional<Space> space = ReadSpace(dir);
  return space ? Reserve(*space, policy) : policy.min_free_bytes;
}

std::vector<std::string> MakeRoom(const std::string& dir, const RetentionPolicy& policy,
                                  std::uint64_t incoming_bytes, const std::string& replacing) {
  std::vector<BundleFile> bundles = ListBundles(dir);
  std::erase_if(bundles, [&](const BundleFile& b) { return b.name == replacing; });
  std::uint64_t total = 0;
  for (const BundleFile& b : bundles) {
    total += b.bytes;
  }
  // Deletion order: oldest first, except that the first bundle of the newest storm (its root
  // cause; the rest of a storm is mostly its echoes) goes last, only when the limits cannot be
  // met without it.
  std::vector<std::size_t> order;
  order.reserve(bundles.size());
  const std::size_t storm_start = StormStart(bundles);
  for (std::size_t i = 0; i < bundles.size(); ++i) {
    if (i != storm_start) {
      order.push_back(i);
    }
  }
  if (!bundles.empty()) {
    order.push_back(storm_start);
  }
  std::vector<std::string> deleted;
  std::size_t left = bundles.size();
  for (std::size_t i : order) {
    if (WithinPolicy(left, total, incoming_bytes, ReadSpace(dir), policy)) {
      break;
    }
    const BundleFile& victim = bundles[i];
    // Already gone (an operator cleaning up by hand) counts as deleted: the space is free.
    if (::unlink(victim.path.c_str()) == 0 || errno == ENOENT) {
      deleted.push_back(victim.path);
    }
    total -= victim.bytes;
    --left;
  }
  return deleted;
}

bool Fits(const std::string& dir, const RetentionPolicy& policy, std::uint64_t bytes) {
  std::optional<Space> space = ReadSpace(dir);
  if (space) {
    // Every older bundle may go to make room for this one.
    for (const BundleFile& b : ListBundles(dir)) {
      space->free += b.bytes;
    }
  }
  return WithinPolicy(0, 0, bytes, space, policy);
}

}  // namespace trainwatch::bundle
