// Files a TailSet cannot follow: past the descriptor budget (read in turn meanwhile:
// tail_set_in_turn.cpp), or refused by the file system (permission denied, a descriptor limit
// hit anyway). They are listed (status shows them), said once in the log — a summary when
// many come at once, not a line per file at every rescan — and tried again at every rescan.
#include <spdlog/spdlog.h>

#include "source/tail_set.h"

namespace trainwatch::source {

std::string TailSet::BudgetSpent() const {
  return fmt::format(
      "{} log files are open, the most the open-file limit allows beside the daemon's own "
      "needs; raise LimitNOFILE. Read in turn meanwhile: {} files a second, each opened for "
      "its turn",
      budget_ ? budget_->limit() : 0, kTurnsPerSecond);
}

void TailSet::MarkUnwatched(const std::string& path, std::string why) {
  if (why.rfind(path + ": ", 0) == 0) {
    why.erase(0, path.size() + 2);  // the file system's errors name the path; so does the list
  }
  auto [it, added] = unwatched_.try_emplace(path, why);
  if (added || it->second != why) {
    it->second = std::move(why);
    newly_unwatched_.push_back(path);
  }
}

void TailSet::ReportUnwatched() {
  constexpr std::size_t kNamed = 3;
  if (newly_unwatched_.empty()) {
    return;
  }
  if (newly_unwatched_.size() <= kNamed) {
    for (const std::string& path : newly_unwatched_) {
      if (auto it = unwatched_.find(path); it != unwatched_.end()) {
        spdlog::warn("source {}: cannot watch {}: {}; tried again at each rescan", source_.name,
                     path, it->second);
      }
    }
  } else {
    std::string first;
    for (std::size_t i = 0; i < kNamed; ++i) {
      first += i == 0 ? "" : ", ";
      first += newly_unwatched_[i];
    }
    const auto reason = unwatched_.find(newly_unwatched_.front());
    spdlog::warn(
        "source {}: cannot watch {} more files ({} in all), {}...: {}; tried again at each "
        "rescan, and `trainwatch status` lists them",
        source_.name, newly_unwatched_.size(), unwatched_.size(), first,
        reason != unwatched_.end() ? reason->second : "");
  }
  newly_unwatched_.clear();
}

}  // namespace trainwatch::source
