#include "detect/line_detector.h"

#include <algorithm>

#include "detect/metric_parser.h"

namespace trainwatch::detect {

using rules::LineRule;
using rules::PatternDetector;
using rules::ThresholdDetector;

namespace {

// The rank a pattern rule's group `rank` reads in `segment` ("Affected ranks: [(?P<rank>\d+)"),
// when its regex names one; a whole number, else none.
std::optional<int> NamedRank(const LineRule& line_rule, std::string_view segment) {
  const auto* pattern = std::get_if<PatternDetector>(&line_rule.rule.detector);
  if (pattern == nullptr || pattern->multiline != rules::Multiline::kNone ||
      pattern->match.regex.find("(?P<rank>") == std::string::npos) {
    return std::nullopt;
  }
  const RE2& regex = line_rule.match->get();
  GroupMatch match;
  return MatchGroups(regex, segment, match) ? RankInGroup(regex, match.data()) : std::nullopt;
}

}  // namespace

LineDetector::LineDetector(rules::LineMatcher matcher) : matcher_(std::move(matcher)) {
  const auto& line_rules = matcher_.rules().rules();
  for (std::size_t i = 0; i < line_rules.size(); ++i) {
    const auto* pattern = std::get_if<PatternDetector>(&line_rules[i].rule.detector);
    if (pattern != nullptr && pattern->multiline == rules::Multiline::kPythonTraceback) {
      groupings_.push_back({i, TracebackGrouper()});
    }
  }
  headers_.resize(groupings_.size());
}

int LineDetector::GroupingOf(std::size_t rule) const {
  // A few traceback rules at most: a search, where a table per rule cost every watched file
  // a few hundred bytes.
  for (std::size_t g = 0; g < groupings_.size(); ++g) {
    if (groupings_[g].rule == rule) {
      return static_cast<int>(g);
    }
  }
  return -1;
}

bool LineDetector::AnyTracebackOpen() const {
  return std::any_of(groupings_.begin(), groupings_.end(),
                     [](const Grouping& g) { return g.grouper.active(); });
}

bool LineDetector::TracebackAwaitingException() const {
  return std::any_of(groupings_.begin(), groupings_.end(),
                     [](const Grouping& g) { return g.grouper.AwaitingException(); });
}

std::uint64_t LineDetector::EarliestOpenLine() const {
  std::uint64_t earliest = 0;
  for (const Grouping& group : groupings_) {
    const std::uint64_t line = group.grouper.EarliestOpenLine();
    if (line != 0 && (earliest == 0 || line < earliest)) {
      earliest = line;
    }
  }
  return earliest;
}

void LineDetector::OnMatch(const source::LineBatch& batch, const rules::SegmentMatch& match,
                           TimePoint now, std::vector<Event>& out) {
  const LineRule& line_rule = matcher_.rules().rules()[match.rule];
  const rules::Rule& rule = line_rule.rule;
  if (const int grouping = GroupingOf(match.rule); grouping >= 0) {
    Header& header = headers_[static_cast<std::size_t>(grouping)];
    if (!header.present) {
      // The prefix before the header ("[rank3]: ", or a progress bar it is glued to) tells
      // which following lines belong to this traceback.
      re2::StringPiece found;
      line_rule.match->get().Match(match.segment, 0, match.segment.size(), RE2::UNANCHORED, &found,
                                   1);
      std::size_t at = static_cast<std::size_t>(found.data() - match.segment.data());
      re2::StringPiece later;
      if (std::string_view(found.data(), found.size()).starts_with("File \"") &&
          line_rule.match->get().Match(match.segment, at + found.size(), match.segment.size(),
                                       RE2::UNANCHORED, &later, 1)) {
        // A header glued onto a frame line ('  File "x.py", line 3, in fTraceback (most
        // ...') opens a traceback: the header, not the frame, is what the line says.
        at = static_cast<std::size_t>(later.data() - match.segment.data());
      }
      header = {match.segment, at, true};
    }
    return;
  }
  std::optional<std::string> metric_said;
  std::optional<int> named_rank;
  if (const auto* spread = std::get_if<rules::SpreadDetector>(&rule.detector)) {
    std::optional<SpreadRuns::Said> said =
        spread_runs_.OnLine(match.rule, *spread, line_rule.match->get(), match.segment, now);
    if (!said) {
      return;
    }
    metric_said = std::move(said->summary);
    named_rank = said->rank;
  } else if (const auto* metric = std::get_if<rules::MetricDetector>(&rule.detector)) {
    // Decided before an event is made: nearly every line it picks says nothing.
    // With the default pattern, the prefilter's hint ends the first "loss" of the segment: no
    // reading starts before it.
    const std::size_t reading_from =
        metric->match.regex == rules::kMetricLossWord && match.end_hint >= 4 ? match.end_hint - 4
                                                                             : 0;
    metric_said = loss_runs_.OnLine(match.rule, *metric, match.segment, reading_from,
                                    batch.LineNumber(match.record));
    if (!metric_said) {
      return;
    }
  }
  Event event;
  event.rule_id = rule.id;
  event.verdict = rule.verdict;
  event.role = rule.role;
  event.kind = rule.kind;
  event.line = batch.LineNumber(match.record);
  event.cut = batch.cut;
  std::size_t match_end = match.end_hint;
  if (match.segment.size() > kMaxEventTextBytes) {
    // The prefilter's hint can be off (a superset match, or none for RE2-only rules): show
    // the window around where RE2 itself matched.
    re2::StringPiece found;
    if (line_rule.match->get().Match(match.segment, 0, match.segment.size(), RE2::UNANCHORED,
                                     &found, 1)) {
      match_end = static_cast<std::size_t>(found.data() + found.size() - match.segment.data());
    }
  }
  event.text = EventText(match.segment, match_end, event.cut);
  if (metric_said) {
    event.summary = std::move(*metric_said);
    event.summary_line = event.line;
  }
  event.rank = named_rank ? named_rank : NamedRank(line_rule, match.segment);
  if (const auto* pattern = std::get_if<rules::PatternDetector>(&rule.detector);
      pattern != nullptr && pattern->last_words) {
    if (AnyTracebackOpen()) {
      return;  // a traceback's own line: its rule tells it
    }
    std::string prefix(WriterPrefixOf(match.segment));
    std::erase_if(last_words_, [&](const LastWords& held) {
      return held.rule == match.rule && held.prefix == prefix;
    });
    if (last_words_.size() < kMaxLastWords) {
      last_words_.push_back(
          {match.rule, std::move(prefix), batches_, match.record, std::move(event)});
    }
    return;
  }
  if (const auto* threshold = std::get_if<ThresholdDetector>(&rule.detector)) {
    auto& hits = threshold_hits_[match.rule];
    hits.push_back(now);
    while (!hits.empty() && now - hits.front() > threshold->within) {
      hits.pop_front();
    }
    if (hits.size() < threshold->count) {
      return;
    }
    hits.clear();  // fire once per `count` matches, not on every match after
    event.summary = std::to_string(threshold->count) + " matches within " +
                    std::to_string(threshold->within.count()) + "ms";
    event.summary_line = event.line;
  }
  if (rule.kind == rules::RuleKind::kSlow &&
      !std::holds_alternative<rules::SpreadDetector>(rule.detector)) {
    spread_runs_.OnWarning(now);  // the job's own straggler warning
  }
  out.push_back(std::move(event));
}

void LineDetector::EmitTracebacks(const Grouping& grouping, std::vector<Event>& out) {
  const LineRule& line_rule = matcher_.rules().rules()[grouping.rule];
  const rules::Rule& rule = line_rule.rule;
  for (Traceback& traceback : finished_) {
    // A traceback rule's `unless` vetoes by the final exception ("...: can only join a child
    // process"), which says more than the header every traceback shares.
    if (line_rule.unless != nullptr && !traceback.summary.empty() &&
        RE2::PartialMatch(traceback.summary, line_rule.unless->get())) {
      continue;
    }
    Event event;
    event.rule_id = rule.id;
    event.verdict = rule.verdict;
    event.role = rule.role;
    // A traceback Python survives ("Exception ignored in ...") is worth a note, not a capture.
    event.kind = traceback.survived ? rules::RuleKind::kWarning : rule.kind;
    event.line = traceback.header_line;
    event.text = EventText(traceback.header_text, traceback.header_text.size(), event.cut);
    bool summary_cut = false;
    event.summary = traceback.summary.empty() ? std::string("(no exception line followed)")
                                              : EventText(traceback.summary, 0, summary_cut);
    if (traceback.survived) {
      event.summary += " (Python printed this traceback and carried on)";
    }
    event.summary_line = traceback.summary_line;
    event.frame = std::move(traceback.innermost_frame);
    event.traceback = true;
    out.push_back(std::move(event));
  }
  finished_.clear();
}

void LineDetector::OnBatch(const source::LineBatch& batch, TimePoint now, std::vector<Event>& out) {
  if (batch.size() == 0) {
    return;
  }
  ++batches_;
  matches_.clear();
  matcher_.Match(batch, matches_);
  bool grouping = AnyTracebackOpen();
  std::size_t next_match = 0;
  for (std::size_t record = 0; record < batch.size(); ++record) {
    if (!grouping) {
      if (next_match == matches_.size()) {
        break;  // nothing matched further on and no traceback is open: skip the rest
      }
      record = std::max<std::size_t>(record, matches_[next_match].record);
    }
    for (Header& header : headers_) {
      header.present = false;
    }
    for (; next_match < matches_.size() && matches_[next_match].record == record; ++next_match) {
      OnMatch(batch, matches_[next_match], now, out);
    }
    for (std::size_t g = 0; g < groupings_.size(); ++g) {
      Grouping& group = groupings_[g];
      const Header& header = headers_[g];
      if (!header.present && !group.grouper.active()) {
        continue;
      }
      const std::string_view text = header.present ? header.segment : batch.LastSegment(record);
      group.grouper.OnLine(
          batch.LineNumber(record), text, header.present ? std::optional(header.at) : std::nullopt,
          header.present ? LinesBefore(batch, record) : std::span<const std::string_view>(),
          finished_);
      EmitTracebacks(group, out);
    }
    grouping = AnyTracebackOpen();
  }
  if (!groupings_.empty()) {
    KeepTail(batch);
  }
  if (!last_words_.empty()) {
    FollowLastWords(batch);
  }
}

void LineDetector::FollowLastWords(const source::LineBatch& batch) {
  for (std::size_t record = 0; record < batch.size() && !last_words_.empty(); ++record) {
    const std::string_view line = batch.LastSegment(record);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) {
      continue;
    }
    const std::string_view prefix = WriterPrefixOf(line);
    if (line.size() > prefix.size() &&
        line.substr(prefix.size()).find_first_not_of(" \t\r") == std::string_view::npos) {
      continue;  // "[rank3]: " and nothing: a blank line of that writer
    }
    std::erase_if(last_words_, [&](const LastWords& held) {
      return held.prefix == prefix && (held.batch != batches_ || record > held.record);
    });
  }
}

void LineDetector::FinishLastWords(std::vector<Event>& out) {
  for (LastWords& held : last_words_) {
    out.push_back(std::move(held.event));
  }
  last_words_.clear();
}

std::span<const std::string_view> LineDetector::LinesBefore(const source::LineBatch& batch,
                                                            std::size_t record) {
  std::size_t count = 0;
  for (std::size_t k = 1; k <= before_.size(); ++k) {
    if (record >= k) {
      before_[count++] = batch.LastSegment(record - k);
    } else if (k - record - 1 < tail_.size()) {
      before_[count++] = tail_[k - record - 1];
    }
  }
  return {before_.data(), count};
}

void LineDetector::KeepTail(const source::LineBatch& batch) {
  std::vector<std::string> tail;
  for (std::size_t k = 1; k <= TracebackGrouper::kMarkerWindow && k <= batch.size(); ++k) {
    tail.emplace_back(batch.LastSegment(batch.size() - k));
  }
  for (std::size_t i = 0; tail.size() < TracebackGrouper::kMarkerWindow && i < tail_.size(); ++i) {
    tail.push_back(std::move(tail_[i]));  // a batch shorter than the window
  }
  tail_ = std::move(tail);
}

void LineDetector::Finish(std::vector<Event>& out) {
  for (Grouping& group : groupings_) {
    group.grouper.CloseAll(finished_);
    EmitTracebacks(group, out);
  }
}

}  // namespace trainwatch::detect
