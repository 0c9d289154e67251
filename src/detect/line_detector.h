// LineDetector: turns the batches of one source into Events, using the source's compiled
// line rules: pattern rules fire per matching segment, multiline python-traceback rules
// fire once per traceback (via TracebackGrouper), threshold rules fire when `count`
// matches fall within `within`. Knows nothing of files or loops: the caller feeds batches
// and the time they arrived. One per source; single thread.
#pragma once

#include <array>
#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "detect/event.h"
#include "detect/loss_runs.h"
#include "detect/spread_runs.h"
#include "detect/traceback_grouper.h"
#include "rules/line_matcher.h"
#include "source/line_batch.h"

namespace trainwatch::detect {

using TimePoint = std::chrono::steady_clock::time_point;

class LineDetector {
 public:
  explicit LineDetector(rules::LineMatcher matcher);

  // Appends the events `batch` completes to `out`. A traceback's event comes when the
  // traceback ends, so it can follow events of later lines.
  void OnBatch(const source::LineBatch& batch, TimePoint now, std::vector<Event>& out);

  // End of input, or a pause long enough that the writer has finished (a crashed process
  // prints nothing after its traceback): ends open tracebacks and appends their events.
  // Later batches are detected as usual.
  void Finish(std::vector<Event>& out);
  // The writers are gone (the input ended, for `scan`; the daemon saw them exit): the
  // last_words matches nothing followed fire now.
  void FinishLastWords(std::vector<Event>& out);
  bool AnyLastWordsPending() const { return !last_words_.empty(); }
  void DropLastWords() { last_words_.clear(); }

  // True while a traceback is open: its event, when it comes, will be for an earlier line
  // than events already reported. Callers that print in line order hold events back.
  bool AnyTracebackOpen() const;
  // True while an open traceback still lacks its exception line.
  bool TracebackAwaitingException() const;
  // The first line of the oldest open traceback, 0 when none is open.
  std::uint64_t EarliestOpenLine() const;

  // The training loss a metric rule read last: its value, step and writer's prefix.
  using LastLoss = LossRuns::LastLoss;
  std::optional<LastLoss> last_loss() const { return loss_runs_.last_loss(); }
  // The spread rules' reports: whether the last one of some writer was uneven, and when one
  // was last read.
  const SpreadRuns& spread_runs() const { return spread_runs_; }

 private:
  struct Grouping {
    std::size_t rule;  // index into the compiled rules
    TracebackGrouper grouper;
  };
  struct Header {
    std::string_view segment;
    std::size_t at = 0;
    bool present = false;
  };

  void OnMatch(const source::LineBatch& batch, const rules::SegmentMatch& match, TimePoint now,
               std::vector<Event>& out);
  void EmitTracebacks(const Grouping& grouping, std::vector<Event>& out);
  // Up to TracebackGrouper::kMarkerWindow lines before `record`, nearest first.
  std::span<const std::string_view> LinesBefore(const source::LineBatch& batch, std::size_t record);
  void KeepTail(const source::LineBatch& batch);
  // The index into groupings_ of the traceback rule `rule`, or -1.
  int GroupingOf(std::size_t rule) const;

  rules::LineMatcher matcher_;
  std::vector<rules::SegmentMatch> matches_;  // reused between batches
  std::vector<Grouping> groupings_;
  std::vector<Header> headers_;  // per grouping, for the current record
  // Per threshold rule that matched; bounded by its count. A map, not a slot per rule: an
  // empty deque costs half a kilobyte, and the daemon has a detector per tailed file.
  std::map<std::size_t, std::deque<TimePoint>> threshold_hits_;
  LossRuns loss_runs_;      // the metric rules'
  SpreadRuns spread_runs_;  // the spread rules'
  // last_words matches not yet followed by their writer's next line: one per rule and writer
  // prefix, at most kMaxLastWords (a log's ranks).
  static constexpr std::size_t kMaxLastWords = 1024;
  struct LastWords {
    std::size_t rule;
    std::string prefix;
    std::uint64_t batch;  // the batch it was matched in (batches_), and its record there
    std::size_t record;
    Event event;
  };
  std::vector<LastWords> last_words_;
  std::uint64_t batches_ = 0;
  // Drops the last_words matches that a later non-blank line of their writer follows.
  void FollowLastWords(const source::LineBatch& batch);
  std::vector<Traceback> finished_;
  std::array<std::string_view, TracebackGrouper::kMarkerWindow> before_;
  // The last lines of the previous batch, nearest first: a header at the top of a batch still
  // sees the lines above it (for "Exception ignored in").
  std::vector<std::string> tail_;
};

}  // namespace trainwatch::detect
