#include "detect/spread_runs.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

#include "detect/metric_parser.h"

namespace trainwatch::detect {

bool MatchGroups(const RE2& regex, std::string_view segment, GroupMatch& match) {
  const int groups =
      std::min(regex.NumberOfCapturingGroups(), static_cast<int>(match.size()) - 1) + 1;
  return regex.Match(re2::StringPiece(segment.data(), segment.size()), 0, segment.size(),
                     RE2::UNANCHORED, match.data(), groups);
}

std::optional<double> NumberInGroup(const RE2& regex, const re2::StringPiece* match,
                                    const std::string& name) {
  const auto& groups = regex.NamedCapturingGroups();
  auto group = groups.find(name);
  if (group == groups.end() || group->second > rules::kMaxSpreadGroups) {
    return std::nullopt;
  }
  const re2::StringPiece text = match[group->second];
  if (text.data() == nullptr || text.empty()) {
    return std::nullopt;
  }
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

std::optional<int> RankInGroup(const RE2& regex, const re2::StringPiece* match) {
  const std::optional<double> rank = NumberInGroup(regex, match, "rank");
  if (!rank || *rank < 0 || *rank >= kMaxRank || *rank != std::floor(*rank)) {
    return std::nullopt;
  }
  return static_cast<int>(*rank);
}

SpreadRuns::Run& SpreadRuns::RunOf(std::pair<std::size_t, std::string> key) {
  auto found = runs_.find(key);
  if (found != runs_.end()) {
    return found->second;
  }
  if (runs_.size() >= kMaxWriters) {
    auto stalest = std::min_element(runs_.begin(), runs_.end(), [](const auto& a, const auto& b) {
      return a.second.last < b.second.last;
    });
    above_ -= stalest->second.above > 0 ? 1 : 0;
    runs_.erase(stalest);
  }
  return runs_.emplace(std::move(key), Run{}).first->second;
}

std::optional<SpreadRuns::Said> SpreadRuns::OnLine(std::size_t rule,
                                                   const rules::SpreadDetector& spread,
                                                   const RE2& regex, std::string_view segment,
                                                   TimePoint now) {
  GroupMatch match;
  if (!MatchGroups(regex, segment, match)) {
    return std::nullopt;
  }
  const std::optional<double> low = NumberInGroup(regex, match.data(), "low");
  const std::optional<double> high = NumberInGroup(regex, match.data(), "high");
  if (!low || !high || *low <= 0 || *high < 0) {
    return std::nullopt;  // no report: a ratio needs a fastest time above 0
  }
  const double ratio = *high / *low;
  const std::string prefix(WriterPrefixOf(segment));
  Run& run = RunOf({rule, prefix});
  run.last = now;
  if (!(ratio >= spread.above)) {
    above_ -= run.above > 0 ? 1 : 0;
    run = Run{0, false, now};  // even again: the next run fires anew
    last_even_ = now;
    return std::nullopt;
  }
  last_uneven_ = now;
  if (run.above++ == 0) {
    ++above_;
  }
  if (run.fired || run.above < spread.for_reports) {
    return std::nullopt;
  }
  run.fired = true;
  Said said;
  said.rank = RankInGroup(regex, match.data());
  const std::string who = said.rank ? "rank " + std::to_string(*said.rank) : "a rank";
  said.summary =
      fmt::format("{}{} is the slowest at {:.2f}x the fastest ({:g} against {:g}){}",
                  prefix.empty() ? "" : prefix + " ", who, ratio, *high, *low,
                  run.above > 1 ? fmt::format(", {} reports in a row", run.above) : std::string());
  return said;
}

}  // namespace trainwatch::detect
