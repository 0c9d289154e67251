// LossRuns: the runs of not-finite training loss a metric rule counts, per rule and writer (a
// log's ranks by their prefix), and the loss read last. Cheap on healthy training, which is
// nearly every line: a line that cannot say "nan" or "inf" while no run is under way is kept as
// text, and read only when a run begins (for "the last finite loss was ...") or `status` asks.
// A tqdm bar with a loss postfix refreshes hundreds of times a line, so reading each refresh
// (three RE2 passes) made a whole `scan` 16 times slower. Single thread.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "rules/rule.h"

namespace trainwatch::detect {

class LossRuns {
 public:
  // The training loss read last: its value, step and writer's prefix.
  struct LastLoss {
    double value = 0;
    std::optional<std::int64_t> step;
    std::string writer;
    std::uint32_t not_finite_in_a_row = 0;  // that writer's run of NaN or inf so far
  };
  static constexpr std::size_t kMaxWriters = 1024;
  // Healthy lines kept as text, newest last; and how much of each.
  static constexpr std::size_t kKeptLines = 32;
  static constexpr std::size_t kKeptBytes = 2048;

  // `segment` (line `line`) is one metric rule `rule` picked; no reading in it starts before
  // `reading_from`. Returns what to say when it makes `metric.not_finite_for` not-finite
  // values of its writer in a row (once per run).
  std::optional<std::string> OnLine(std::size_t rule, const rules::MetricDetector& metric,
                                    std::string_view segment, std::size_t reading_from,
                                    std::uint64_t line);
  std::optional<LastLoss> last_loss() const;

 private:
  struct Run {
    std::uint32_t not_finite = 0;
    std::uint64_t first_line = 0;
    std::optional<std::int64_t> first_step;
    std::optional<double> last_finite;
    std::optional<std::int64_t> last_finite_step;
    std::uint64_t last_finite_seq = 0;  // when it was read (seq_)
    bool fired = false;
  };
  struct Kept {
    std::uint64_t seq = 0;  // 0: empty
    std::size_t rule = 0;
    std::string text;
  };
  Run& RunOf(std::size_t rule, std::string prefix);
  // The writer's last finite loss, from the kept lines when they are newer than its run knows.
  void RecallLastFinite(std::size_t rule, std::string_view prefix, Run& run) const;

  std::map<std::pair<std::size_t, std::string>, Run> runs_;
  std::size_t active_ = 0;  // runs with a not-finite value under way
  std::uint64_t seq_ = 0;   // lines read, fast or not
  std::array<Kept, kKeptLines> kept_;
  std::size_t next_kept_ = 0;
  std::uint64_t evicted_seq_ = 0;  // the newest kept line pushed out
  std::optional<LastLoss> last_read_;
  std::uint64_t last_read_seq_ = 0;
};

}  // namespace trainwatch::detect
