// LineMatcher: finds which line rules match which segments of a LineBatch. One prefilter
// pass over the whole batch proposes (rule, offset) candidates; RE2 confirms each on its
// segment and checks `unless`. Cost is one pass over the bytes plus work per candidate,
// not per rule. Scans with its thread's scratch (core/multi_regex_scanner.h): a matcher
// belongs to the thread that created it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "core/multi_regex_scanner.h"
#include "core/result.h"
#include "rules/compiled_rules.h"
#include "source/line_batch.h"

namespace trainwatch::rules {

struct SegmentMatch {
  std::uint32_t rule = 0;    // index into CompiledRules::rules()
  std::uint32_t record = 0;  // index into the batch's records
  std::string_view segment;  // the matching segment, a view into the batch
  // Where in `segment` the prefilter saw a match end (0 when unknown): lets a caller show
  // the part of a long segment that matched.
  std::uint32_t end_hint = 0;
};

class LineMatcher {
 public:
  static Result<LineMatcher> Create(std::shared_ptr<const CompiledRules> rules);

  // Appends the confirmed matches of `batch` to `out`, in order of position, at most one
  // per (rule, segment).
  void Match(const source::LineBatch& batch, std::vector<SegmentMatch>& out);

  const CompiledRules& rules() const { return *rules_; }

 private:
  struct Candidate {
    std::uint64_t end;  // offset one past the candidate match's last byte
    std::uint32_t rule;
  };

  LineMatcher(std::shared_ptr<const CompiledRules> rules, MultiRegexScanner scanner)
      : rules_(std::move(rules)), scanner_(std::move(scanner)) {}
  // Records a prefilter candidate unless its rule already has one in this segment.
  void OnCandidate(std::uint32_t rule, std::uint64_t end, std::string_view text);
  // RE2's verdict on `segment` (and the rule's `unless`); `prefilter_end`: where in it the
  // prefilter saw the rule's match end, when it did.
  bool Confirm(std::size_t rule, std::string_view segment,
               std::optional<std::size_t> prefilter_end) const;

  std::shared_ptr<const CompiledRules> rules_;
  MultiRegexScanner scanner_;              // of rules_->regexes()
  std::vector<Candidate> candidates_;      // reused between batches
  std::vector<const char*> last_segment_;  // per rule: segment already judged this batch
  // Per rule: the end of the segment it already has a candidate in. The prefilter reports
  // every offset where a match can end ('MODULE:\w+' ends at each byte of a long word), so
  // later reports in the same segment are dropped at once: one candidate per rule and segment.
  std::vector<std::uint64_t> covered_until_;
  std::vector<std::size_t> all_rules_;  // every rule index, for a batch the scan failed on
};

}  // namespace trainwatch::rules
