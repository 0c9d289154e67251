// How logrotate names the copy of a log it rotates, so that a copy made by copytruncate can
// be told from an unrelated file that happens to start with the same bytes. Pure; any thread.
#pragma once

#include <string>

namespace trainwatch::source {

// Whether `copy` (a path) is named the way logrotate names a copy of the file named
// `original` (a file name) in `dir`: train.log.1, train.log-20261121 (a suffix), or
// train.1.log, train-20261121.log (`extension` kept last). Nothing looser: rank logs that
// begin with the same banner (job1.log and job17.log) are never copies of each other.
bool IsRotatedCopyName(const std::string& copy, const std::string& dir,
                       const std::string& original);

}  // namespace trainwatch::source
