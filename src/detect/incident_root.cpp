#include "detect/incident_root.h"

#include <tuple>

namespace trainwatch::detect {
namespace {

// Lower is more telling.
int RoleClass(const Firing& firing) {
  switch (firing.event.kind) {
    case rules::RuleKind::kCrash:
    case rules::RuleKind::kDevice:
      return static_cast<int>(firing.event.role);  // primary 0, consequence 1, report 2
    case rules::RuleKind::kHang:
      return 3;
    case rules::RuleKind::kWarning:
      return 4;
  }
  return 4;
}

int KindOrder(rules::RuleKind kind) { return kind == rules::RuleKind::kDevice ? 0 : 1; }

// A traceback's summary is its last line, which often wraps the failure another rule names
// (the launcher's exception around a worker's): a line rule, with no summary, says it better.
int Specificity(const Event& event) { return event.summary.empty() ? 0 : 1; }

bool Before(const Firing& a, const Firing& b) {
  const auto key = [](const Firing& firing) {
    return std::make_tuple(RoleClass(firing), KindOrder(firing.event.kind));
  };
  if (key(a) != key(b)) {
    return key(a) < key(b);
  }
  if (RoleClass(a) != 0 && Specificity(a.event) != Specificity(b.event)) {
    // Among reports of another's failure, a line rule names it ("Timed out waiting 1000ms
    // for recv") where a traceback's last line is often the launcher's re-raise around it.
    return Specificity(a.event) < Specificity(b.event);
  }
  if (a.stream == b.stream && a.source == b.source && a.event.line != 0 && b.event.line != 0) {
    if (a.event.line != b.event.line) {
      return a.event.line < b.event.line;  // one stream: its lines say the order exactly
    }
  } else if (a.first_line_time != b.first_line_time) {
    return a.first_line_time < b.first_line_time;
  }
  return Specificity(a.event) < Specificity(b.event);
}

}  // namespace

const Firing* RootFiring(const std::vector<Firing>& firings) {
  const Firing* root = nullptr;
  for (const Firing& firing : firings) {
    if (root == nullptr || Before(firing, *root)) {
      root = &firing;
    }
  }
  return root;
}

const Firing* RootError(const std::vector<Firing>& firings) {
  const Firing* root = RootFiring(firings);
  return root != nullptr && RoleClass(*root) == 0 ? root : nullptr;
}

void MarkConsequentTracebacks(std::vector<Firing>& firings) {
  for (Firing& traceback : firings) {
    if (!traceback.event.traceback || traceback.event.summary_line == 0 ||
        traceback.event.role != rules::Role::kPrimary) {
      continue;
    }
    for (const Firing& line : firings) {
      if (&line != &traceback && line.event.role != rules::Role::kPrimary &&
          !line.event.traceback && line.stream == traceback.stream &&
          line.source == traceback.source && line.event.line == traceback.event.summary_line) {
        traceback.event.role = line.event.role;
        break;
      }
    }
  }
}

}  // namespace trainwatch::detect
