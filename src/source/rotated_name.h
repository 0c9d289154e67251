// How logrotate names the copy of a log it rotates, so that a copy made by copytruncate can
// be told from an unrelated file that happens to start with the same bytes. Pure; any thread.
#pragma once

#include <string>
#include <vector>

namespace trainwatch::source {

// Whether `copy` (a path) is named the way logrotate names a copy of the file named
// `original` (a file name) in `dir`: train.log.1, train.log-20261121 (a suffix), or
// train.1.log, train-20261121.log (`extension` kept last). Nothing looser: rank logs that
// begin with the same banner (job1.log and job17.log) are never copies of each other.
bool IsRotatedCopyName(const std::string& copy, const std::string& dir,
                       const std::string& original);

// The file names of which a file named `copy_name` could be such a copy: every `original`
// for which IsRotatedCopyName(dir + "/" + copy_name, dir, original) may hold (a few; some
// may not hold, the caller checks). Lets the daemon look a new file's originals up by name
// instead of comparing it with every file it follows.
std::vector<std::string> RotatedCopyOriginals(const std::string& copy_name);

}  // namespace trainwatch::source
