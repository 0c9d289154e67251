// Internal to the built-in collectors (process_collectors, system_facts, file_collectors):
// the helpers they share to build a CollectorResult the same way, and the small POSIX
// directory and link wrappers they walk /proc, /sys and log folders with. Not for use outside
// src/collect/. Stateless; any thread.
#pragma once

#include <dirent.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collect/artifact.h"
#include "core/result.h"

namespace trainwatch::collect::collector_internal {

using SteadyClock = std::chrono::steady_clock;

std::string ErrnoText(int error);

// Appends one line to `result.detail`.
void AddDetail(CollectorResult& result, const std::string& line);
// An artifact holding `content`.
void AddText(CollectorResult& result, std::string path, std::string content, bool redact = true);
// An artifact naming `length` bytes of `source_file` from `offset`, streamed by the writer.
void AddRange(CollectorResult& result, std::string path, std::string source_file,
              std::uint64_t offset, std::uint64_t length);

// Fills in what every collector reports the same way: bytes, duration and the status.
// `asked` and `read` count the things asked for (pids, files, dirs) and those that could be
// read: kSkipped ("nothing to collect" unless detail says more) when nothing was asked,
// kFailed when nothing could be read, kOk otherwise.
void Finish(CollectorResult& result, SteadyClock::time_point start, std::size_t asked,
            std::size_t read);

// "812 B", "1.5 KiB", "4.0 MiB".
std::string HumanBytes(std::uint64_t bytes);

// A decimal number as /proc names pids, descriptors and cpus; -1 for anything else.
int ParseNumber(std::string_view text);

struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};
using DirPtr = std::unique_ptr<DIR, DirCloser>;

// Opens `name` below `parent` (or AT_FDCWD) as a directory. Without `follow`, never through a
// symlink (O_NOFOLLOW: a directory swapped for a link to /etc after it was stat'ed fails, with
// ENOTDIR since O_DIRECTORY sees the link first).
Result<DirPtr> OpenDirAt(int parent, const std::string& name, bool follow);

// The names in an open directory but "." and "..", sorted.
std::vector<std::string> Names(DIR* dir);

// The target of the symlink `path`, relative to `dirfd` (or AT_FDCWD).
Result<std::string> ReadLinkAt(int dirfd, const std::string& path);

}  // namespace trainwatch::collect::collector_internal
