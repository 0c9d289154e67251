// The resolving rules' lines (rules::Rule::resolves): "nfs: server fs01 OK" ends the incident
// "nfs: server fs01 not responding" opened, and opens none. Built from the loaded rules at each
// start and reload; consulted for each firing before it may join an incident. Loop thread.
#pragma once

#include <re2/re2.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "detect/incident.h"
#include "ops/incident_lifecycle.h"
#include "rules/rule.h"

namespace trainwatch::incident {

class ResolvingLines {
 public:
  ResolvingLines() = default;
  explicit ResolvingLines(const std::vector<rules::Rule>& rules);

  // When `firing` is a resolving rule's: resolves what it ends in `lifecycle` (at `wall_now`)
  // and is true; the firing opens nothing then. False for any other rule's.
  bool Resolve(const detect::Firing& firing, ops::IncidentLifecycle& lifecycle,
               detect::WallTime wall_now) const;
  // Whether `failure` is the failure the resolving line `ok` ended, come back after it (same
  // rule, source and name): "fs01 not responding" after "fs01 OK".
  bool CameBack(const detect::Firing& ok, const detect::Firing& failure) const;

 private:
  struct Resolver {
    std::string target;
    // The first capture group of each (when both have one) names the failure: "fs01".
    std::shared_ptr<const RE2> own;
    std::shared_ptr<const RE2> target_pattern;  // null when the target is no pattern rule
  };
  // Whether the failure `text` (the target rule's) is the one `ok_text` (the resolver's) ends.
  static bool SameFailure(const Resolver& resolver, std::string_view ok_text,
                          std::string_view text);
  std::map<std::string, Resolver, std::less<>> by_rule_;
};

}  // namespace trainwatch::incident
