#include "collect/file_collectors.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string_view>
#include <utility>

#include "collect/bundle_names.h"
#include "core/directory.h"
#include "core/quantity.h"
#include "core/stopwatch.h"
#include "core/time_format.h"
#include "core/unique_fd.h"

namespace trainwatch::collect {
namespace {

// How far past the cut a tail looks for the next line start.
constexpr std::size_t kLineStartWindow = 64 << 10;
constexpr int kMaxWalkDepth = 32;
constexpr std::size_t kMaxWalkEntries = 100000;
constexpr std::size_t kMaxListingEntries = 10000;
constexpr int kListingLevels = 2;
// Symlinks skipped are named in detail up to this many, then counted.
constexpr std::size_t kMaxNamedSkips = 20;

// The first line start at or after `offset` in the open file, looking at most kLineStartWindow
// bytes ahead: `offset` itself when the byte before it is a newline. A line longer than the
// window, or the file's last line, is cut at `offset`; an unreadable window leaves `offset` as
// it is (the writer will record the problem when it copies).
std::uint64_t LineStartFrom(int fd, std::uint64_t offset, std::uint64_t size) {
  if (offset == 0 || offset >= size) {
    return offset;
  }
  std::string window(
      static_cast<std::size_t>(std::min<std::uint64_t>(kLineStartWindow + 1, size - offset + 1)),
      '\0');
  ssize_t n = ::pread(fd, window.data(), window.size(), static_cast<off_t>(offset - 1));
  if (n <= 0) {
    return offset;
  }
  std::size_t newline = std::string_view(window.data(), static_cast<std::size_t>(n)).find('\n');
  if (newline == std::string_view::npos) {
    return offset;
  }
  // window[0] is at offset - 1: the line starts right after the newline. A newline that ends
  // the file would leave an empty tail: the cut line is better than nothing.
  std::uint64_t line_start = offset + newline;
  return line_start < size ? line_start : offset;
}

// The tail range of an open regular file of `size` bytes: at most `budget` bytes, starting at
// a line start when it does not start at 0.
std::pair<std::uint64_t, std::uint64_t> TailRange(int fd, std::uint64_t size,
                                                  std::uint64_t budget) {
  if (size <= budget) {
    return {0, size};
  }
  std::uint64_t offset = LineStartFrom(fd, size - budget, size);
  return {offset, size - offset};
}

// The path with symlinks resolved: operators name paths through links (latest.log ->
// run-42.log), and the bundle writer opens sources with O_NOFOLLOW.
Result<std::string> RealPath(const std::string& path) {
  std::unique_ptr<char, decltype(&std::free)> real(::realpath(path.c_str(), nullptr), &std::free);
  if (!real) {
    return Error{std::strerror(errno)};
  }
  return std::string(real.get());
}

// What a skip list says: the first kMaxNamedSkips names, then a count.
void AddSkips(CollectorResult& result, const std::vector<std::string>& skipped,
              const std::string& what) {
  for (std::size_t i = 0; i < skipped.size() && i < kMaxNamedSkips; ++i) {
    AddDetail(result, what + ": " + skipped[i]);
  }
  if (skipped.size() > kMaxNamedSkips) {
    AddDetail(result, "... and " + std::to_string(skipped.size() - kMaxNamedSkips) + " more " +
                          what + " entries");
  }
}

}  // namespace

CollectorResult CollectLogTails(const std::vector<std::string>& files, std::uint64_t tail_bytes) {
  const Stopwatch stopwatch;
  CollectorResult result;
  result.name = "log_tails";
  UniqueNames names;
  std::size_t read = 0;
  for (const std::string& file : files) {
    // The operator named this path, so a symlink (latest.log -> run-42.log) is theirs to name:
    // resolve it, since the writer opens the source with O_NOFOLLOW.
    Result<std::string> real = RealPath(file);
    if (!real) {
      AddDetail(result, file + ": " + real.error().message);
      continue;
    }
    UniqueFd fd(::open(real->c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW));
    struct stat st {};
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) {
      AddDetail(result, file + ": " + std::strerror(errno));
      continue;
    }
    if (!S_ISREG(st.st_mode)) {
      AddDetail(result, file + ": not a regular file");
      continue;
    }
    ++read;
    auto size = static_cast<std::uint64_t>(st.st_size);
    auto [offset, length] = TailRange(fd.get(), size, tail_bytes);
    result.truncated = result.truncated || offset > 0;
    AddRange(result, "logs/" + names.Take(SafeBundleName(file)), *real, offset, length);
  }
  Finish(result, stopwatch, files.size(), read);
  return result;
}

namespace {

struct FoundFile {
  std::string relative;
  std::uint64_t size = 0;
  timespec mtime{};
};

struct Walk {
  std::vector<FoundFile> files;
  std::vector<std::string> symlinks;
  std::vector<std::string> unreadable;
  std::size_t others = 0;  // sockets, FIFOs, devices
  std::size_t entries = 0;
  bool cut = false;  // depth or entry limit reached
};

// Records every regular file below the open directory `dir`, whose path relative to the top
// is `relative` ("" for the top). Symlinks are recorded as skipped, never followed.
void WalkDirectory(DIR* dir, const std::string& relative, int depth, Walk& walk) {
  for (const std::string& name : DirNames(dir)) {
    if (++walk.entries > kMaxWalkEntries) {
      walk.cut = true;
      return;
    }
    std::string path = relative.empty() ? name : relative + "/" + name;
    struct stat st {};
    if (::fstatat(::dirfd(dir), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      walk.unreadable.push_back(path + ": " + std::strerror(errno));
    } else if (S_ISLNK(st.st_mode)) {
      walk.symlinks.push_back(path);
    } else if (S_ISREG(st.st_mode)) {
      walk.files.push_back({path, static_cast<std::uint64_t>(st.st_size), st.st_mtim});
    } else if (S_ISDIR(st.st_mode)) {
      if (depth + 1 >= kMaxWalkDepth) {
        walk.cut = true;
        continue;
      }
      Result<DirPtr> child = OpenDirAt(::dirfd(dir), name, /*follow=*/false);
      if (!child.ok()) {
        walk.unreadable.push_back(path + ": " + child.error().message);
        continue;
      }
      WalkDirectory(child->get(), path, depth + 1, walk);
    } else {
      ++walk.others;
    }
  }
}

}  // namespace

CollectorResult CollectDirectory(const std::string& name, const std::string& dir,
                                 const std::string& prefix, std::uint64_t max_bytes) {
  const Stopwatch stopwatch;
  CollectorResult result;
  result.name = name;
  Walk walk;
  {
    Result<DirPtr> top = OpenDirAt(AT_FDCWD, dir, /*follow=*/true);
    if (!top.ok()) {
      struct stat st {};
      bool missing = ::stat(dir.c_str(), &st) != 0 && errno == ENOENT;
      Finish(result, stopwatch, 1, 0);
      result.status = missing ? CollectorStatus::kMissing : CollectorStatus::kFailed;
      result.detail = dir + ": " + top.error().message;
      return result;
    }
    WalkDirectory(top->get(), "", 0, walk);
  }

  std::sort(walk.files.begin(), walk.files.end(), [](const FoundFile& a, const FoundFile& b) {
    if (a.mtime.tv_sec != b.mtime.tv_sec) {
      return a.mtime.tv_sec > b.mtime.tv_sec;
    }
    if (a.mtime.tv_nsec != b.mtime.tv_nsec) {
      return a.mtime.tv_nsec > b.mtime.tv_nsec;
    }
    return a.relative < b.relative;
  });
  std::uint64_t left = max_bytes;
  std::size_t i = 0;
  for (; i < walk.files.size(); ++i) {
    const FoundFile& file = walk.files[i];
    std::string source = dir + "/" + file.relative;
    if (file.size <= left) {
      AddRange(result, prefix + "/" + file.relative, source, 0, file.size);
      left -= file.size;
      continue;
    }
    // The file crossing the cap: its newest lines, up to what is left, then stop (older files
    // would only be older). Opened without following, like the walk.
    UniqueFd fd(::open(source.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW));
    if (fd.get() >= 0 && left > 0) {
      auto [offset, length] = TailRange(fd.get(), file.size, left);
      if (length > 0 && length <= left) {
        AddRange(result, prefix + "/" + file.relative, source, offset, length);
        AddDetail(result, "kept the last " + std::to_string(length) + " of " +
                              std::to_string(file.size) + " bytes of " + file.relative + " (cap " +
                              FormatByteSize(max_bytes) + ")");
        result.truncated = true;
        ++i;
      }
    }
    break;
  }
  if (i < walk.files.size()) {
    result.truncated = true;
    AddDetail(result, "left out " + std::to_string(walk.files.size() - i) +
                          " older file(s) over the cap of " + FormatByteSize(max_bytes));
  }
  AddSkips(result, walk.symlinks, "skipped symlink (not followed)");
  AddSkips(result, walk.unreadable, "unreadable");
  if (walk.others > 0) {
    AddDetail(result, "skipped " + std::to_string(walk.others) + " special file(s)");
  }
  if (walk.cut) {
    AddDetail(result, "walk stopped at " + std::to_string(kMaxWalkDepth) + " levels or " +
                          std::to_string(kMaxWalkEntries) + " entries");
    result.truncated = true;
  }
  // An empty directory read fine; one whose every entry failed did not.
  std::size_t asked = 1;
  std::size_t read = walk.files.empty() && !walk.unreadable.empty() ? 0 : 1;
  Finish(result, stopwatch, asked, read);
  return result;
}

namespace {

// The listing of an open directory, `levels` deep: "type size mtime path" per entry.
void ListDirectory(DIR* dir, const std::string& relative, int level, std::string& text,
                   std::size_t& entries, bool& cut) {
  for (const std::string& name : DirNames(dir)) {
    if (entries >= kMaxListingEntries) {
      cut = true;
      return;
    }
    ++entries;
    std::string path = relative.empty() ? name : relative + "/" + name;
    struct stat st {};
    if (::fstatat(::dirfd(dir), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      text += "? " + path + ": " + std::strerror(errno) + "\n";
      continue;
    }
    char type = S_ISREG(st.st_mode)   ? 'f'
                : S_ISDIR(st.st_mode) ? 'd'
                : S_ISLNK(st.st_mode) ? 'l'
                                      : 'o';
    char size[24];
    std::snprintf(size, sizeof size, "%15llu", static_cast<unsigned long long>(st.st_size));
    text += std::string(1, type) + " " + size + " " +
            FormatUtc(std::chrono::system_clock::from_time_t(st.st_mtim.tv_sec),
                      TimeFormat::kIsoSeconds) +
            " " + path;
    if (S_ISLNK(st.st_mode)) {
      Result<std::string> target = ReadLinkAt(::dirfd(dir), name);
      text += " -> " + (target.ok() ? *target : "?");
    }
    if (S_ISDIR(st.st_mode)) {
      text += "/";
    }
    text += "\n";
    if (S_ISDIR(st.st_mode) && level < kListingLevels) {
      Result<DirPtr> child = OpenDirAt(::dirfd(dir), name, /*follow=*/false);
      if (child.ok()) {
        ListDirectory(child->get(), path, level + 1, text, entries, cut);
      } else {
        text += "? " + path + "/: " + child.error().message + "\n";
      }
    }
  }
}

}  // namespace

CollectorResult CollectPaths(const std::vector<std::string>& paths,
                             std::uint64_t max_bytes_per_file) {
  const Stopwatch stopwatch;
  CollectorResult result;
  result.name = "extra_paths";
  UniqueNames names;
  std::size_t read = 0;
  for (const std::string& path : paths) {
    Result<std::string> real = RealPath(path);
    struct stat st {};
    if (!real || ::stat(real->c_str(), &st) != 0) {
      AddDetail(result, path + ": " + (real ? std::strerror(errno) : real.error().message));
      continue;
    }
    if (S_ISREG(st.st_mode)) {
      ++read;
      auto size = static_cast<std::uint64_t>(st.st_size);
      if (size > max_bytes_per_file) {
        result.truncated = true;
        AddDetail(result, path + ": kept the first " + FormatByteSize(max_bytes_per_file) + " of " +
                              FormatByteSize(size));
      }
      AddRange(result, "extra/" + names.Take(SafeBundleName(path)), *real, 0,
               std::min(size, max_bytes_per_file));
    } else if (S_ISDIR(st.st_mode)) {
      Result<DirPtr> dir = OpenDirAt(AT_FDCWD, *real, /*follow=*/true);
      if (!dir.ok()) {
        AddDetail(result, path + ": " + dir.error().message);
        continue;
      }
      ++read;
      std::string text = "# " + path +
                         ": type (f file, d directory, l symlink, o other), size, "
                         "mtime (UTC), path; " +
                         std::to_string(kListingLevels) + " levels\n";
      std::size_t entries = 0;
      bool cut = false;
      ListDirectory(dir->get(), "", 1, text, entries, cut);
      if (cut) {
        text += "# cut at " + std::to_string(kMaxListingEntries) + " entries\n";
        result.truncated = true;
        AddDetail(result,
                  path + ": listing cut at " + std::to_string(kMaxListingEntries) + " entries");
      }
      AddText(result, "extra/" + names.Take(SafeBundleName(path) + ".listing.txt"),
              std::move(text));
    } else {
      AddDetail(result, path + ": neither a file nor a directory");
    }
  }
  Finish(result, stopwatch, paths.size(), read);
  return result;
}

}  // namespace trainwatch::collect
