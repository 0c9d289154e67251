#include "core/multi_regex_scanner.h"

#include <hs/hs.h>

#include <climits>

namespace trainwatch {

// Hyperscan's scratch space, shared by the scanners of one thread.
struct MultiRegexScanner::Scratch {
  hs_scratch_t* space = nullptr;
  ~Scratch() { hs_free_scratch(space); }
};

Result<MultiRegexScanner> MultiRegexScanner::Create(const MultiRegex& regexes) {
  if (!regexes.database_) {
    return MultiRegexScanner(&regexes, nullptr);
  }
  // One scratch per thread, grown to fit every database used there: the daemon's hundred
  // tailed files have a hundred matchers on the loop thread, and never two scans at once.
  // Growing moves the scratch, so scanners share the holder, not the pointer.
  thread_local const std::shared_ptr<Scratch> shared = std::make_shared<Scratch>();
  if (hs_alloc_scratch(regexes.database_.get(), &shared->space) != HS_SUCCESS) {
    return Error{"cannot allocate Hyperscan scratch space"};
  }
  return MultiRegexScanner(&regexes, shared);
}

bool MultiRegexScanner::ScanWith(std::string_view text, MatchHandler handler, void* context) {
  if (!scratch_) {
    return true;  // nothing is prefiltered: nothing to propose
  }
  if (text.size() > UINT_MAX) {
    return false;  // hs_scan takes an unsigned length
  }
  const hs_error_t rc =
      hs_scan(regexes_->database_.get(), text.data(), static_cast<unsigned>(text.size()), 0,
              scratch_->space, handler, context);
  // TERMINATED: the caller stopped the scan, having seen all it needed.
  return rc == HS_SUCCESS || rc == HS_SCAN_TERMINATED;
}

}  // namespace trainwatch
