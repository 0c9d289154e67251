// MultiRegexScanner: runs the prefilter of one MultiRegex over a text and reports each
// candidate, a pattern and where its match may end, for the caller to confirm with RE2
// (MultiRegex::Matches, or a Match of its own). Uses its thread's Hyperscan scratch, shared by
// every scanner of that thread: a scanner belongs to the thread that created it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <type_traits>
#include <utility>

#include "core/multi_regex.h"
#include "core/result.h"

namespace trainwatch {

class MultiRegexScanner {
 public:
  // Fails only when Hyperscan cannot allocate scratch space. REQUIRES: `regexes` outlives the
  // scanner.
  static Result<MultiRegexScanner> Create(const MultiRegex& regexes);

  // Calls on_candidate(std::uint32_t pattern, std::uint64_t end) for each place where a
  // prefiltered pattern may match, `end` one past the match's last byte, in order of `end`;
  // returning false from it stops the scan. Patterns that are not prefiltered are never
  // proposed. Returns false when the pass could not run (a text over 4 GiB, a Hyperscan
  // error): then any pattern may match anywhere, and the caller must ask RE2 about each.
  template <typename OnCandidate>
  bool Scan(std::string_view text, OnCandidate&& on_candidate);

 private:
  struct Scratch;
  // Hyperscan's match_event_handler.
  using MatchHandler = int (*)(unsigned int id, unsigned long long from, unsigned long long to,
                               unsigned int flags, void* context);

  MultiRegexScanner(const MultiRegex* regexes, std::shared_ptr<Scratch> scratch)
      : regexes_(regexes), scratch_(std::move(scratch)) {}
  bool ScanWith(std::string_view text, MatchHandler handler, void* context);

  const MultiRegex* regexes_;
  std::shared_ptr<Scratch> scratch_;  // null when no pattern is prefiltered
};

template <typename OnCandidate>
bool MultiRegexScanner::Scan(std::string_view text, OnCandidate&& on_candidate) {
  using Callback = std::remove_reference_t<OnCandidate>;
  const MatchHandler handler = [](unsigned int id, unsigned long long /*from*/,
                                  unsigned long long to, unsigned int /*flags*/,
                                  void* context) -> int {
    const bool go_on = (*static_cast<Callback*>(context))(static_cast<std::uint32_t>(id),
                                                          static_cast<std::uint64_t>(to));
    return go_on ? 0 : 1;
  };
  return ScanWith(text, handler, const_cast<void*>(static_cast<const void*>(&on_candidate)));
}

}  // namespace trainwatch
