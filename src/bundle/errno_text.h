// ErrnoText: an errno value as words, for the bundle writer's errors and manifest problems.
// Separate because four of its files need it; std::error_code's message rather than strerror,
// which need not be thread-safe, since the first pass reads files on several threads at once.
#pragma once

#include <string>
#include <system_error>

namespace trainwatch::bundle {

inline std::string ErrnoText(int error) {
  return std::error_code(error, std::generic_category()).message();
}

}  // namespace trainwatch::bundle
