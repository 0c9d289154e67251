// Path globs for file sources (`/data/runs/**/*.log`): the regular files a pattern matches now,
// the directories to watch so that a new match is noticed, and a match test for one path.
// Stateless; reads the file system through a FileSystem (the real one unless a test gives a
// fake), with no stat where the directory entry's type suffices, because the daemon rescans
// every few seconds. Any thread.
//
// Syntax, per '/'-separated component:
//   *  ?  [...]   as fnmatch(3), within one component; a backslash escapes the next character
//   **            a whole component: zero or more directories (in `a**b` it is just `*`)
// Hidden names (a leading '.') match only a component that spells the '.' itself, as in
// shells: `*.log` skips a `.train.log.tmp` written before a rename, and `**` never enters
// `.git` or `.cache`. `**` does not follow symlinked directories (no loops) and descends at
// most 16 levels; any other component follows symlinks. A trailing `**` means `**/*`.
// Patterns must be absolute; a relative one matches nothing.
#pragma once

#include <string>
#include <vector>

#include "core/file_system.h"

namespace trainwatch::source {

// The regular files (symlinks to them included, under the link's name) that match, sorted,
// without duplicates. Missing or unreadable directories are skipped silently: a log
// directory often appears only once a job starts.
std::vector<std::string> ExpandGlob(const std::string& pattern,
                                    const FileSystem& fs = RealFileSystem());

// The directories whose changes can change ExpandGlob's answer, sorted: the deepest existing
// directory of the pattern's literal prefix, and every existing directory the walk below it
// looked into (each directory `**` enters, the parents of literal components). The daemon
// puts an inotify watch on each and expands again when one of them changes.
std::vector<std::string> GlobWatchDirs(const std::string& pattern,
                                       const FileSystem& fs = RealFileSystem());

// Whether `path` (absolute) would match, from the text alone: the file's type is not checked.
// For deciding whether a newly created file belongs to a source.
bool GlobMatches(const std::string& pattern, const std::string& path);

// The directory part of a glob before its first wildcard ("/data/runs" of
// "/data/runs/**/*.log"): where its files live, for disk usage.
std::string LiteralDirOf(const std::string& pattern);

}  // namespace trainwatch::source
