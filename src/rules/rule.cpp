#include "rules/rule.h"

#include <algorithm>

namespace trainwatch::rules {

std::string_view RuleKindName(RuleKind kind) {
  switch (kind) {
    case RuleKind::kCrash:
      return "crash";
    case RuleKind::kHang:
      return "hang";
    case RuleKind::kDevice:
      return "device";
    case RuleKind::kWarning:
      return "warning";
    case RuleKind::kDiverged:
      return "diverged";
    case RuleKind::kSlow:
      return "slow";
  }
  return "unknown";
}

std::optional<RuleKind> ParseRuleKind(std::string_view name) {
  for (RuleKind kind : {RuleKind::kCrash, RuleKind::kHang, RuleKind::kDevice, RuleKind::kWarning,
                        RuleKind::kDiverged, RuleKind::kSlow}) {
    if (RuleKindName(kind) == name) {
      return kind;
    }
  }
  return std::nullopt;
}

bool IsAlarm(RuleKind kind) { return kind != RuleKind::kWarning; }

bool Rule::HasTag(std::string_view tag) const {
  return std::find(tags.begin(), tags.end(), tag) != tags.end();
}

bool Rule::MatchesLines() const {
  return std::holds_alternative<PatternDetector>(detector) ||
         std::holds_alternative<ThresholdDetector>(detector) ||
         std::holds_alternative<MetricDetector>(detector) ||
         std::holds_alternative<SpreadDetector>(detector);
}

}  // namespace trainwatch::rules
