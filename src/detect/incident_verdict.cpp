#include "detect/incident_verdict.h"

#include <algorithm>

namespace trainwatch::detect {
namespace {

constexpr std::size_t kMaxOthersSaid = 3;
constexpr std::size_t kMaxOthersKept = 16;

}  // namespace

void VerdictTally::Add(const Event& event) {
  const bool alarm = rules::IsAlarm(event.kind);
  std::optional<Seen>& best = alarm ? alarm_ : warning_;
  if (alarm && event.kind != rules::RuleKind::kHang) {
    only_hangs_ = false;
  }
  const Seen seen{event.rule_id, event.verdict};
  auto keep = [this](const Seen& other) {
    const bool known = std::any_of(others_.begin(), others_.end(), [&](const Seen& kept) {
      return kept.rule == other.rule && kept.verdict == other.verdict;
    });
    if (!known && others_.size() < kMaxOthersKept) {
      others_.push_back(other);
    }
  };
  if (!best || event.verdict.cause > best->verdict.cause) {
    if (best && best->rule != seen.rule) {
      keep(*best);
    }
    best = seen;
  } else if (seen.rule != best->rule) {
    keep(seen);
  }
}

IncidentVerdict VerdictTally::Result() const {
  IncidentVerdict result;
  const std::optional<Seen>& best = alarm_ ? alarm_ : warning_;
  if (!best) {
    return result;
  }
  result.verdict = best->verdict;
  result.rule = best->rule;
  result.why = best->rule + " (" + std::string(rules::CauseName(best->verdict.cause)) + ")";
  std::vector<std::string> outranked;
  for (const Seen& other : others_) {
    if (other.verdict.cause < best->verdict.cause && other.rule != best->rule) {
      std::string said =
          other.rule + " (" + std::string(rules::CauseName(other.verdict.cause)) + ")";
      if (std::find(outranked.begin(), outranked.end(), said) == outranked.end()) {
        outranked.push_back(std::move(said));
      }
    }
  }
  if (!outranked.empty()) {
    result.why += " outranks ";
    for (std::size_t i = 0; i < outranked.size() && i < kMaxOthersSaid; ++i) {
      result.why += (i > 0 ? ", " : "") + outranked[i];
    }
    if (outranked.size() > kMaxOthersSaid) {
      result.why += " and " + std::to_string(outranked.size() - kMaxOthersSaid) + " more";
    }
  }
  if (alarm_ && only_hangs_ && result.verdict.action == rules::Action::kExcludeNode) {
    result.verdict.action = rules::Action::kInspect;
    result.why += "; a hang alone never excludes a node";
  }
  return result;
}

}  // namespace trainwatch::detect
