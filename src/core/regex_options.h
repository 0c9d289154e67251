// The one set of RE2 options every regex of the daemon is compiled with (rule patterns,
// redaction patterns), so the loader's validation, the matchers and the example checker agree.
// Patterns work on bytes (Latin-1 mode): log lines may hold invalid UTF-8 or NULs, and the
// multi-pattern prefilter (core/multi_regex.h) is byte-oriented too.
#pragma once

#include <re2/re2.h>

namespace trainwatch {

inline RE2::Options RegexOptions() {
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingLatin1);
  options.set_log_errors(false);
  // The default leaves room for a few hundred alternatives per rule; a larger rule is an
  // operator mistake reported at load time ("pattern too large"), not a daemon slowdown.
  options.set_max_mem(8 << 20);
  return options;
}

}  // namespace trainwatch
