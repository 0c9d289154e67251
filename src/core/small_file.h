// ReadSmallFile: the whole of one of the daemon's own small files (the saved offsets, the
// Alertmanager store) through the file seam, so that tests can take it away or damage it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "core/file_system.h"
#include "core/result.h"

namespace trainwatch {

// The file's bytes; nullopt when there is no such file; an error naming `path` when it cannot
// be read or holds more than `max_bytes` (a file that large is not one the daemon wrote).
Result<std::optional<std::string>> ReadSmallFile(const FileSystem& fs, const std::string& path,
                                                 std::size_t max_bytes);

}  // namespace trainwatch
