#include "detect/incident_root.h"

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <utility>

namespace trainwatch::detect {
namespace {

// Lower is more telling.
int RoleClass(const Firing& firing) {
  switch (firing.event.kind) {
    case rules::RuleKind::kCrash:
    case rules::RuleKind::kDevice:
      return static_cast<int>(firing.event.role);  // primary 0, consequence 1, report 2
    case rules::RuleKind::kHang:
    case rules::RuleKind::kDiverged:
      return 3;
    case rules::RuleKind::kSlow:
      return 4;
    case rules::RuleKind::kWarning:
      return 5;
  }
  return 5;
}

int KindOrder(rules::RuleKind kind) { return kind == rules::RuleKind::kDevice ? 0 : 1; }

// A traceback's summary is its last line, which often wraps the failure another rule names
// (the launcher's exception around a worker's): a line rule, with no summary, says it better.
int Specificity(const Event& event) { return event.summary.empty() ? 0 : 1; }

// The tier a firing tells from: lower is more telling. Among consequences and reports, a line
// rule names the failure ("Timed out waiting 1000ms for recv") where a traceback's last line
// is often the launcher's re-raise around it.
std::tuple<int, int, int> Tier(const Firing& firing) {
  return {RoleClass(firing), KindOrder(firing.event.kind),
          RoleClass(firing) != 0 ? Specificity(firing.event) : 0};
}

}  // namespace

const Firing* RootFiring(const std::vector<Firing>& firings) {
  const Firing* most_telling = nullptr;
  for (const Firing& firing : firings) {
    if (most_telling == nullptr || Tier(firing) < Tier(*most_telling)) {
      most_telling = &firing;
    }
  }
  if (most_telling == nullptr) {
    return nullptr;
  }
  const auto top = Tier(*most_telling);
  // Within one stream its lines say the order exactly; across streams, when each one's first
  // line was read. Two steps, each a total order, so the answer never depends on the order
  // the firings came in.
  std::map<std::pair<std::string, std::string>, const Firing*> first_of_stream;
  std::vector<const Firing*> candidates;
  for (const Firing& firing : firings) {
    if (Tier(firing) != top) {
      continue;
    }
    if (firing.event.line == 0) {
      candidates.push_back(&firing);  // no line (a stall, an exit): its time alone
      continue;
    }
    const Firing*& first = first_of_stream[{firing.source, firing.stream}];
    if (first == nullptr || std::make_tuple(firing.event.line, Specificity(firing.event)) <
                                std::make_tuple(first->event.line, Specificity(first->event))) {
      first = &firing;
    }
  }
  for (const auto& [stream, first] : first_of_stream) {
    candidates.push_back(first);
  }
  const auto across = [](const Firing* firing) {
    return std::make_tuple(firing->first_line_time, Specificity(firing->event),
                           std::cref(firing->source), std::cref(firing->stream),
                           firing->event.line);
  };
  const Firing* root = nullptr;
  for (const Firing* candidate : candidates) {
    if (root == nullptr || across(candidate) < across(root)) {
      root = candidate;
    }
  }
  return root;
}

bool OnlyConsequences(const std::vector<Firing>& firings) {
  return RootError(firings) == nullptr &&
         std::any_of(firings.begin(), firings.end(), [](const Firing& firing) {
           return (firing.event.kind == rules::RuleKind::kCrash ||
                   firing.event.kind == rules::RuleKind::kDevice) &&
                  firing.event.role != rules::Role::kPrimary;
         });
}

const Firing* RootError(const std::vector<Firing>& firings) {
  const Firing* root = RootFiring(firings);
  return root != nullptr && RoleClass(*root) == 0 ? root : nullptr;
}

std::optional<int> ReportedStraggler(const Incident& incident) {
  if (incident.kind != rules::RuleKind::kSlow) {
    return std::nullopt;
  }
  for (const Firing& firing : incident.firings) {
    if (firing.event.kind == rules::RuleKind::kSlow && firing.event.rank) {
      return firing.event.rank;
    }
  }
  return std::nullopt;
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
