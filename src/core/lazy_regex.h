// LazyRegex: an RE2 compiled at its first use. The rules' regexes are the judges of the few
// lines their prefilter proposes: most never judge a line, and each compiled RE2 holds 5-10 KiB
// (its parsed regexp and program), 0.6 MiB of a daemon's 1.7 MiB of heap with the shipped
// rules. A set keeps the pattern and options and compiles on demand; the first use pays the
// compile (tens of microseconds). Shared between threads after it is built; any thread.
#pragma once

#include <re2/re2.h>

#include <memory>
#include <mutex>
#include <string>

namespace trainwatch {

class LazyRegex {
 public:
  // Keeps `compiled` (checked ok() by the caller) until Release().
  explicit LazyRegex(std::unique_ptr<const RE2> compiled);
  LazyRegex(const LazyRegex&) = delete;
  LazyRegex& operator=(const LazyRegex&) = delete;

  // Drops the compiled form: the next get() compiles it again from the same pattern and
  // options. REQUIRES: before the regex is shared between threads.
  void Release() { regex_.reset(); }
  const RE2& get() const;
  const std::string& pattern() const { return pattern_; }
  bool compiled() const { return regex_ != nullptr; }

 private:
  std::string pattern_;
  RE2::Options options_;
  mutable std::once_flag once_;
  mutable std::unique_ptr<const RE2> regex_;
};

}  // namespace trainwatch
