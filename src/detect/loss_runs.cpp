#include "detect/loss_runs.h"

#include <algorithm>

#include "detect/metric_parser.h"

namespace trainwatch::detect {
namespace {

// ASCII letters to lower case, nothing else to a letter: no locale, no call (std::tolower was
// half of a scan's time here).
char FoldCase(char c) { return static_cast<char>(static_cast<unsigned char>(c) | 0x20U); }

// Whether `text` could print a loss of NaN or inf: it holds "nan", or "inf" not starting
// "info" (the INFO of logging lines). False for nearly every healthy line, at memchr-like cost.
bool MayTellNotFinite(std::string_view text) {
  for (std::size_t i = 0; i + 2 < text.size(); ++i) {
    const char c = FoldCase(text[i]);
    if (c == 'n' && FoldCase(text[i + 1]) == 'a' && FoldCase(text[i + 2]) == 'n') {
      return true;
    }
    if (c == 'i' && FoldCase(text[i + 1]) == 'n' && FoldCase(text[i + 2]) == 'f' &&
        (i + 3 == text.size() || FoldCase(text[i + 3]) != 'o')) {
      return true;
    }
  }
  return false;
}

}  // namespace

LossRuns::Run& LossRuns::RunOf(std::size_t rule, std::string prefix) {
  auto key = std::make_pair(rule, std::move(prefix));
  auto found = runs_.find(key);
  if (found == runs_.end()) {
    if (runs_.size() >= kMaxWriters) {
      active_ -= runs_.begin()->second.not_finite > 0 ? 1 : 0;
      runs_.erase(runs_.begin());
    }
    found = runs_.emplace(std::move(key), Run{}).first;
  }
  return found->second;
}

void LossRuns::RecallLastFinite(std::size_t rule, std::string_view prefix, Run& run) const {
  for (std::size_t i = 0; i < kKeptLines; ++i) {
    const Kept& kept = kept_[(next_kept_ + kKeptLines - 1 - i) % kKeptLines];  // newest first
    if (kept.seq == 0 || kept.seq <= run.last_finite_seq) {
      break;
    }
    if (kept.rule != rule || WriterPrefixOf(kept.text) != prefix) {
      continue;
    }
    if (const std::optional<LossReading> reading = ReadLoss(kept.text);
        reading && reading->finite) {
      run.last_finite = reading->value;
      run.last_finite_step = reading->step;
      run.last_finite_seq = kept.seq;
      return;
    }
  }
  if (evicted_seq_ > run.last_finite_seq) {
    // A newer finite value of this writer may have been pushed out: better none than a stale one.
    run.last_finite.reset();
    run.last_finite_step.reset();
  }
}

std::optional<std::string> LossRuns::OnLine(std::size_t rule, const rules::MetricDetector& metric,
                                            std::string_view segment, std::size_t reading_from,
                                            std::uint64_t line) {
  ++seq_;
  if (active_ == 0 && !MayTellNotFinite(segment.substr(std::min(reading_from, segment.size())))) {
    // Healthy training: a finite loss or none, and no run to end. Kept, read if ever needed.
    Kept& kept = kept_[next_kept_];
    evicted_seq_ = std::max(evicted_seq_, kept.seq);
    kept.seq = seq_;
    kept.rule = rule;
    kept.text.assign(segment.substr(0, kKeptBytes));
    next_kept_ = (next_kept_ + 1) % kKeptLines;
    return std::nullopt;
  }
  const std::optional<LossReading> reading = ReadLoss(segment);
  if (!reading) {
    return std::nullopt;
  }
  const std::string_view prefix = WriterPrefixOf(segment);
  Run& run = RunOf(rule, std::string(prefix));
  if (reading->finite) {
    active_ -= run.not_finite > 0 ? 1 : 0;
    run = Run{};
    run.last_finite = reading->value;
    run.last_finite_step = reading->step;
    run.last_finite_seq = seq_;
  } else if (!reading->overflow) {  // an fp16 step the scaler skipped neither counts nor resets
    if (run.not_finite++ == 0) {
      ++active_;
      run.first_line = line;
      run.first_step = reading->step;
      RecallLastFinite(rule, prefix, run);
    }
  }
  last_read_ = LastLoss{reading->value, reading->step, std::string(prefix), run.not_finite};
  last_read_seq_ = seq_;
  if (reading->finite || reading->overflow || run.fired || run.not_finite < metric.not_finite_for) {
    return std::nullopt;
  }
  run.fired = true;  // once per run: a finite value starts the count again
  std::string said(prefix);
  said += (said.empty() ? "" : " ") + metric.metric + " is " + LossText(reading->value) + " on " +
          std::to_string(run.not_finite) + " lines in a row since " +
          (run.first_step ? "step " + std::to_string(*run.first_step) + " (line " +
                                std::to_string(run.first_line) + ")"
                          : "line " + std::to_string(run.first_line));
  if (run.last_finite) {
    said += "; the last finite " + metric.metric + " was " + LossText(*run.last_finite) +
            (run.last_finite_step ? " at step " + std::to_string(*run.last_finite_step) : "");
  }
  return said;
}

std::optional<LossRuns::LastLoss> LossRuns::last_loss() const {
  for (std::size_t i = 0; i < kKeptLines; ++i) {
    const Kept& kept = kept_[(next_kept_ + kKeptLines - 1 - i) % kKeptLines];  // newest first
    if (kept.seq == 0 || kept.seq <= last_read_seq_) {
      break;
    }
    if (const std::optional<LossReading> reading = ReadLoss(kept.text)) {
      return LastLoss{reading->value, reading->step, std::string(WriterPrefixOf(kept.text)), 0};
    }
  }
  return last_read_;
}

}  // namespace trainwatch::detect
