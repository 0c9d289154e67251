#include "rules/line_matcher.h"

#include <algorithm>
#include <cstring>

namespace trainwatch::rules {

Result<LineMatcher> LineMatcher::Create(std::shared_ptr<const CompiledRules> rules) {
  Result<MultiRegexScanner> scanner = MultiRegexScanner::Create(rules->regexes());
  if (!scanner) {
    return scanner.error();
  }
  // last_segment_ and covered_until_ are sized at the first Match: a daemon watching 10,000
  // quiet files keeps one matcher per file, and most never match anything.
  return LineMatcher(std::move(rules), std::move(*scanner));
}

void LineMatcher::OnCandidate(std::uint32_t rule, std::uint64_t end, std::string_view text) {
  if (end <= covered_until_[rule]) {
    return;  // this rule already has a candidate in this segment
  }
  const std::size_t last_byte = end == 0 ? 0 : static_cast<std::size_t>(end - 1);
  const void* newline = std::memchr(text.data() + last_byte, '\n', text.size() - last_byte);
  covered_until_[rule] = newline ? static_cast<const char*>(newline) - text.data() : text.size();
  candidates_.push_back({end, rule});
}

bool LineMatcher::Confirm(std::size_t rule_index, std::string_view segment,
                          std::optional<std::size_t> prefilter_end) const {
  if (!(prefilter_end ? rules_->regexes().MatchesEndingAt(rule_index, segment, *prefilter_end)
                      : rules_->regexes().Matches(rule_index, segment))) {
    return false;
  }
  const LineRule& rule = rules_->rules()[rule_index];
  return rule.unless == nullptr || rule.multiline ||
         !RE2::PartialMatch(segment, rule.unless->get());
}

void LineMatcher::Match(const source::LineBatch& batch, std::vector<SegmentMatch>& out) {
  if (batch.text.empty() || batch.size() == 0) {
    return;
  }
  const auto& rules = rules_->rules();
  candidates_.clear();
  last_segment_.assign(rules.size(), nullptr);
  covered_until_.assign(rules.size(), 0);
  // If the scan itself fails (it should not: its inputs are our own), no line may be lost:
  // this batch is judged by RE2 alone, every rule on every segment.
  const bool scan_failed = !scanner_.Scan(batch.text, [&](std::uint32_t rule, std::uint64_t end) {
    OnCandidate(rule, end, batch.text);
    return true;  // keep scanning: other rules may match later in the batch
  });
  if (scan_failed) {
    candidates_.clear();
  }
  // The prefilter reports in end order already; sorting keeps that promise explicit and makes
  // rule order deterministic for candidates that end at the same byte.
  std::sort(candidates_.begin(), candidates_.end(), [](const Candidate& a, const Candidate& b) {
    return a.end != b.end ? a.end < b.end : a.rule < b.rule;
  });
  const std::size_t first_out = out.size();
  for (const Candidate& candidate : candidates_) {
    const std::size_t last_byte = candidate.end == 0 ? 0 : candidate.end - 1;
    const std::string_view segment = batch.SegmentAt(last_byte);
    if (last_segment_[candidate.rule] == segment.data()) {
      // Once per rule and segment: OnCandidate already drops repeats inside a segment, but a
      // prefilter match that ends on the '\n' itself maps back to the segment it closes.
      continue;
    }
    last_segment_[candidate.rule] = segment.data();
    const std::size_t segment_begin = segment.data() - batch.text.data();
    const auto end_hint = static_cast<std::uint32_t>(
        std::min<std::size_t>(candidate.end - segment_begin, segment.size()));
    if (Confirm(candidate.rule, segment, end_hint)) {
      out.push_back({candidate.rule, static_cast<std::uint32_t>(batch.RecordAt(last_byte)), segment,
                     end_hint});
    }
  }
  if (rules_->unfiltered().empty() && !scan_failed) {
    return;
  }
  // Rules the prefilter refused: RE2 on every segment (slow, and said so at load time).
  if (scan_failed) {
    all_rules_.resize(rules.size());
    for (std::size_t i = 0; i < rules.size(); ++i) {
      all_rules_[i] = i;
    }
  }
  const std::vector<std::size_t>& slow_rules = scan_failed ? all_rules_ : rules_->unfiltered();
  for (std::size_t record = 0; record < batch.size(); ++record) {
    std::string_view rest = batch.Record(record);
    while (true) {
      const std::size_t cut = rest.find('\n');
      const std::string_view segment = rest.substr(0, cut);
      for (std::size_t index : slow_rules) {
        if (!segment.empty() && Confirm(index, segment, std::nullopt)) {
          out.push_back(
              {static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(record), segment, 0});
        }
      }
      if (cut == std::string_view::npos) {
        break;
      }
      rest.remove_prefix(cut + 1);
    }
  }
  std::stable_sort(out.begin() + static_cast<std::ptrdiff_t>(first_out), out.end(),
                   [](const SegmentMatch& a, const SegmentMatch& b) {
                     return a.segment.data() < b.segment.data();
                   });
}

}  // namespace trainwatch::rules
