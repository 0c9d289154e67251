// SpreadRuns: the job's own straggler reports a spread rule reads (Megatron's "MnRtt/Rnk:
// 3453.08ms/8 | MxRtt/Rnk: 4610.20ms/0"), and the runs of them, per rule and writer (a log's
// ranks by their prefix), whose slowest rank is `above` times the fastest. A report comes once
// per logging interval, so each line a spread rule matched is read whole (its regex's groups
// `low`, `high` and `rank`). Single thread.
#pragma once

#include <re2/re2.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "rules/rule.h"

namespace trainwatch::detect {

// A line's groups as RE2::Match fills them, the first kMaxSpreadGroups of them.
using GroupMatch = std::array<re2::StringPiece, rules::kMaxSpreadGroups + 1>;
// Matches `regex` in `segment`, filling `match`; false when it does not match.
bool MatchGroups(const RE2& regex, std::string_view segment, GroupMatch& match);

// The number in a regex's named group `name` of `match` (filled by MatchGroups); nullopt when
// the regex has no such group, it did not take part, or it is no number.
std::optional<double> NumberInGroup(const RE2& regex, const re2::StringPiece* match,
                                    const std::string& name);

// The rank in group `rank`: a whole number below kMaxRank (the shared directory's records'
// bound: a larger one would make every peer refuse the record), else nullopt.
inline constexpr double kMaxRank = 1 << 20;
std::optional<int> RankInGroup(const RE2& regex, const re2::StringPiece* match);

class SpreadRuns {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  static constexpr std::size_t kMaxWriters = 1024;

  // What a run says when it reaches its count: the sentence, and the slow rank.
  struct Said {
    std::string summary;
    std::optional<int> rank;
  };

  // `segment` is a line spread rule `rule` (regex `regex`) matched, read at `now`. Returns what
  // to say when it makes `spread.for_reports` reports in a row above `spread.above` for its
  // writer (once per run).
  std::optional<Said> OnLine(std::size_t rule, const rules::SpreadDetector& spread,
                             const RE2& regex, std::string_view segment, TimePoint now);
  // A line of a slow pattern rule fired: the job warned of its own straggler (NVIDIA's
  // resiliency extension's "STRAGGLER DETECTION WARNING"), which it repeats each report while
  // the straggler lasts.
  void OnWarning(TimePoint now) { last_warning_ = now; }
  // How long an uneven report or a warning holds the job slow: longer than the reports' usual
  // interval (a writer that stopped reporting holds it no longer).
  static constexpr std::chrono::minutes kHolds{10};
  // Whether the job's reports still say it is uneven: some writer's last report was above its
  // rule's ratio, or it warned, within kHolds.
  bool SaysSlow(TimePoint now) const {
    return (above_ > 0 && last_uneven_ && now - *last_uneven_ < kHolds) ||
           (last_warning_ && now - *last_warning_ < kHolds);
  }
  // When a report last said the ranks are even (below its rule's ratio); the epoch when none
  // did. A warning says nothing of evenness.
  TimePoint last_even_report() const { return last_even_; }

 private:
  struct Run {
    std::uint32_t above = 0;  // reports in a row above the ratio
    bool fired = false;
    TimePoint last{};  // its last report
  };
  // The run of `key`, made room for by forgetting the writer that reported longest ago.
  Run& RunOf(std::pair<std::size_t, std::string> key);

  std::map<std::pair<std::size_t, std::string>, Run> runs_;
  std::size_t above_ = 0;  // runs whose last report was above
  TimePoint last_even_{};
  std::optional<TimePoint> last_uneven_;
  std::optional<TimePoint> last_warning_;
};

}  // namespace trainwatch::detect
