// Loads rule packs (YAML files, or directories of them) into Rule values, collecting every
// problem as a Diagnostic with file:line:col rather than stopping at the first. Checks the
// structure, the regexes (RE2 syntax, compiled here) and that ids are unique. Running each
// rule's examples is ExampleChecker's job. Pure function of the files; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/source_location.h"
#include "rules/rule.h"

namespace trainwatch::rules {

// A file's `verdicts:` entry: sets the cause and/or action of the rules `rule` names (an id or
// an fnmatch glob of ids), after every file is loaded.
struct VerdictOverride {
  std::string rule;
  std::optional<Cause> cause;
  std::optional<Action> action;
  std::optional<Role> role;
  SourceLocation where;
};

struct LoadedRules {
  std::vector<Rule> rules;
  std::vector<VerdictOverride> overrides;  // in load order; applied by ApplyVerdictOverrides
  std::vector<std::string> files;          // every rule file read, in load order
  std::vector<Diagnostic> errors;
};

// Each path is a rule file or a directory whose *.yaml and *.yml files (not recursive) are
// loaded in name order. Rules of all files land in one list; ids must be unique across them.
LoadedRules LoadRulePaths(const std::vector<std::string>& paths);

// Parses one rule file's text; `file_name` is used in diagnostics. Appends to `out`.
void LoadRuleText(std::string_view text, const std::string& file_name, LoadedRules& out);

// Applies `out.overrides` in order (a later one wins) to the rules they name; one that names
// no rule is an error at its place. LoadRulePaths does this once every file is read.
void ApplyVerdictOverrides(LoadedRules& out);
// Each `resolves` names a loaded rule that opens incidents (not a warning, not another
// resolving rule); an error at the resolving rule otherwise. LoadRulePaths calls it.
void CheckResolvingRules(LoadedRules& out);

}  // namespace trainwatch::rules
