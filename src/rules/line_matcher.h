// LineMatcher: finds which line rules match which segments of a LineBatch. One Hyperscan
// pass over the whole batch proposes (rule, offset) candidates; RE2 confirms each on its
// segment and checks `unless`. Cost is one pass over the bytes plus work per candidate,
// not per rule. Uses its thread's Hyperscan scratch: a matcher belongs to the thread that
// created it.
#pragma once

#include <hs/hs.h>

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

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
  // Hyperscan's scratch space, shared by the matchers of one thread.
  struct Scratch {
    hs_scratch_t* space = nullptr;
    ~Scratch();
  };
  struct Candidate {
    std::uint64_t end;  // offset one past the candidate match's last byte
    std::uint32_t rule;
  };

  explicit LineMatcher(std::shared_ptr<const CompiledRules> rules) : rules_(std::move(rules)) {}
  static int OnCandidate(unsigned int id, unsigned long long from, unsigned long long to,
                         unsigned int flags, void* context);
  bool Confirm(const LineRule& rule, std::string_view segment) const;

  std::shared_ptr<const CompiledRules> rules_;
  std::shared_ptr<Scratch> scratch_;
  std::vector<Candidate> candidates_;      // reused between batches
  std::vector<const char*> last_segment_;  // per rule: segment already judged this batch
  // Per rule: the end of the segment it already has a candidate in. Hyperscan reports every
  // offset where a match can end ('MODULE:\w+' ends at each byte of a long word), so later
  // reports in the same segment are dropped at once: one candidate per rule and segment.
  std::vector<std::uint64_t> covered_until_;
  std::string_view scanning_;           // the batch text during hs_scan
  std::vector<std::size_t> all_rules_;  // every rule index, for a batch the scan failed on
};

}  // namespace trainwatch::rules
