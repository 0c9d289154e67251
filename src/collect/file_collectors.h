// The built-in collectors of files: tails of named logs, a log directory such as $HABANA_LOGS
// newest first up to a cap, and paths the operator named (files copied, directories listed).
// Big files travel as a path and byte range the bundle writer streams; nothing is read whole
// here. Plain blocking functions without state, run on the daemon's thread pool; any thread.
// Status as for every built-in collector: kOk when at least one thing asked for was read (a
// missing or unreadable one is a line of `detail`), kFailed when none, kSkipped when none asked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collect/artifact.h"

namespace trainwatch::collect {

// "log_tails": the last `tail_bytes` of each file, as an Artifact naming the file and the byte
// range (streamed by the bundle writer, not read here), at logs/<SafeBundleName(path)> (unique
// within the call). When the range does not start at 0 it is moved forward to the next line
// start, found by reading a 64 KiB window, so the tail starts with a whole line (a line longer
// than the window, or the file's last line, is cut rather than left out); such an artifact is
// truncated. A symlink named by the operator is
// resolved and its target tailed. A missing or non-regular file is a detail line.
CollectorResult CollectLogTails(const std::vector<std::string>& files, std::uint64_t tail_bytes);

// "habana_logs" and any directory copy, named `name`: every regular file under `dir`, newest
// first (by mtime; ties by path), at <prefix>/<path relative to dir>, until `max_bytes` in all.
// The file that would cross the cap contributes its tail up to the cap (moved forward to a line
// start as in CollectLogTails: the newest lines of a log are the ones wanted), marked
// truncated; older files are left out, counted in detail. Never follows a symlink below `dir`:
// symlinked files and directories are skipped and named in detail (a link to /etc is never
// entered), subdirectories are opened relative to their parent with O_NOFOLLOW, and the writer
// opens the files with O_NOFOLLOW. `dir` itself may be a symlink (the operator named it).
// Walks at most 32 levels deep and 100000 entries. A missing `dir`: kMissing.
CollectorResult CollectDirectory(const std::string& name, const std::string& dir,
                                 const std::string& prefix, std::uint64_t max_bytes);

// "extra_paths": paths the operator named. A file is copied from its start, up to
// `max_bytes_per_file` (then truncated), at extra/<SafeBundleName(path)>; a directory is listed
// — type, size, mtime and relative path of each entry, two levels deep, symlinks shown with
// their target and not followed, at most 10000 entries — in
// extra/<SafeBundleName(path)>.listing.txt (a checkpoints directory's listing, not its gigabytes).
// Missing paths are detail lines.
CollectorResult CollectPaths(const std::vector<std::string>& paths,
                             std::uint64_t max_bytes_per_file);

}  // namespace trainwatch::collect
