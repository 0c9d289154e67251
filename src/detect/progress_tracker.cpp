#include "detect/progress_tracker.h"

#include <algorithm>

namespace trainwatch::detect {
namespace {

constexpr std::size_t kMaxBarText = 512;

}  // namespace

void ProgressTracker::OnUpdate(const ProgressUpdate& update, std::uint64_t line,
                               std::string_view text, SteadyTime now) {
  auto found = bars_.find(update.key);
  if (found == bars_.end()) {
    if (bars_.size() >= kMaxBars) {
      auto oldest = std::min_element(bars_.begin(), bars_.end(), [](const auto& a, const auto& b) {
        return a.second.last_update < b.second.last_update;
      });
      bars_.erase(oldest);
    }
    Bar bar;
    bar.key = update.key;
    bar.count = update.count;
    bar.first_seen = bar.last_advance = now;
    found = bars_.emplace(update.key, std::move(bar)).first;
  } else if (found->second.count != update.count) {
    found->second.count = update.count;
    found->second.last_advance = now;
    found->second.advanced = true;
    found->second.reported.clear();
    last_advance_line_ = std::max(last_advance_line_, line);
  }
  Bar& bar = found->second;
  bar.label = update.label;
  bar.total = update.total;
  bar.complete = update.Complete();
  bar.line = line;
  bar.text.assign(text.substr(0, kMaxBarText));
  bar.last_update = now;
  bar.ended = false;
  ended_ = false;  // output again: a new job writes here
}

void ProgressTracker::EndJob() {
  ended_ = true;
  for (auto& [key, bar] : bars_) {
    bar.ended = true;
  }
}

std::vector<const Bar*> ProgressTracker::TakeStalled(std::size_t rule, Duration stall_after,
                                                     Duration startup_grace, SteadyTime now) {
  std::vector<const Bar*> stalled;
  for (auto& [key, bar] : bars_) {
    if (bar.complete || bar.ended ||
        std::find(bar.reported.begin(), bar.reported.end(), rule) != bar.reported.end()) {
      continue;
    }
    const Duration allowed = bar.advanced ? stall_after : std::max(stall_after, startup_grace);
    if (now - bar.last_advance >= allowed) {
      bar.reported.push_back(rule);
      stalled.push_back(&bar);
    }
  }
  return stalled;
}

const Bar* ProgressTracker::Latest() const {
  const Bar* latest = nullptr;
  for (const auto& [key, bar] : bars_) {
    if (latest == nullptr || bar.last_update > latest->last_update) {
      latest = &bar;
    }
  }
  return latest;
}

}  // namespace trainwatch::detect
