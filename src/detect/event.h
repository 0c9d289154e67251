// Event: one rule firing on a source, as plain data. Detectors make them; `scan` prints
// them; the daemon's incident stage groups them. Value type; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rules/rule.h"

namespace trainwatch::detect {

// Event texts are capped: a 64 KiB progress line should not travel whole into every event
// (and, in `scan`, into every held event).
inline constexpr std::size_t kMaxEventTextBytes = 4096;

// The part of `segment` worth showing: all of it when short, else kMaxEventTextBytes around
// `end_hint` (where the match ended; 0 when unknown). Sets `cut` when it shortened.
std::string EventText(std::string_view segment, std::size_t end_hint, bool& cut);

struct Event {
  std::string rule_id;
  rules::RuleKind kind = rules::RuleKind::kCrash;
  std::uint64_t line = 0;          // 1-based line (counting '\n') of the first line of evidence
  std::string text;                // the segment that fired (a traceback's header line)
  std::string summary;             // tracebacks: the final exception line; thresholds: the count
  std::uint64_t summary_line = 0;  // line of the summary, 0 when it has none
  std::string frame;               // tracebacks: the innermost `File "...", line N, in F`
  bool traceback = false;          // a whole traceback (multiline: python-traceback)
  bool cut = false;                // the line was longer than the cap and `text` is a piece of it
  rules::Verdict verdict;          // its rule's cause and action
  // Its rule's role; a traceback that ends in a consequence's or report's line plays it too
  // (detect/incident_root.h).
  rules::Role role = rules::Role::kPrimary;
  // The rank the line names as its subject, when its rule's regex has a group `rank` (a
  // straggler report rank 0 prints of rank 5): it stands before the writer's own rank.
  std::optional<int> rank;
};

}  // namespace trainwatch::detect
