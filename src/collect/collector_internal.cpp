#include "collect/collector_internal.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <utility>

namespace trainwatch::collect::collector_internal {

std::string ErrnoText(int error) { return std::strerror(error); }

void AddDetail(CollectorResult& result, const std::string& line) {
  if (!result.detail.empty()) {
    result.detail += '\n';
  }
  result.detail += line;
}

void AddText(CollectorResult& result, std::string path, std::string content, bool redact) {
  Artifact artifact;
  artifact.path = std::move(path);
  artifact.content = std::move(content);
  artifact.redact = redact;
  result.artifacts.push_back(std::move(artifact));
}

void AddRange(CollectorResult& result, std::string path, std::string source_file,
              std::uint64_t offset, std::uint64_t length) {
  Artifact artifact;
  artifact.path = std::move(path);
  artifact.source_file = std::move(source_file);
  artifact.offset = offset;
  artifact.length = length;
  result.artifacts.push_back(std::move(artifact));
}

void Finish(CollectorResult& result, SteadyClock::time_point start, std::size_t asked,
            std::size_t read) {
  result.bytes = 0;
  for (const Artifact& artifact : result.artifacts) {
    result.bytes += artifact.source_file.empty() ? artifact.content.size() : artifact.length;
  }
  if (asked == 0) {
    result.status = CollectorStatus::kSkipped;
    if (result.detail.empty()) {
      result.detail = "nothing to collect";
    }
  } else if (read == 0) {
    result.status = CollectorStatus::kFailed;
  } else {
    result.status = CollectorStatus::kOk;
  }
  result.duration_seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
}

std::string HumanBytes(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  if (unit == 0) {
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  }
  return text;
}

int ParseNumber(std::string_view text) {
  if (text.empty() || text.size() > 9) {
    return -1;
  }
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      return -1;
    }
    value = value * 10 + (c - '0');
  }
  return value;
}

Result<DirPtr> OpenDirAt(int parent, const std::string& name, bool follow) {
  int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW);
  int fd = ::openat(parent, name.c_str(), flags);
  if (fd < 0) {
    return Error{ErrnoText(errno)};
  }
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    int error = errno;
    ::close(fd);
    return Error{ErrnoText(error)};
  }
  return DirPtr(dir);
}

std::vector<std::string> Names(DIR* dir) {
  std::vector<std::string> names;
  while (dirent* entry = ::readdir(dir)) {
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) {
      names.emplace_back(entry->d_name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::string> ReadLinkAt(int dirfd, const std::string& path) {
  std::string target(PATH_MAX, '\0');
  ssize_t n = ::readlinkat(dirfd, path.c_str(), target.data(), target.size());
  if (n < 0) {
    return Error{path + ": " + ErrnoText(errno)};
  }
  target.resize(static_cast<std::size_t>(n));
  return target;
}

}  // namespace trainwatch::collect::collector_internal
