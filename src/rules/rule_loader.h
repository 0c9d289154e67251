// Loads rule packs (YAML files, or directories of them) into Rule values, collecting every
// problem as a Diagnostic with file:line:col rather than stopping at the first. Checks the
// structure, the regexes (RE2 syntax, compiled here) and that ids are unique. Running each
// rule's examples is ExampleChecker's job. Pure function of the files; any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/source_location.h"
#include "rules/rule.h"

namespace trainwatch::rules {

struct LoadedRules {
  std::vector<Rule> rules;
  std::vector<std::string> files;  // every rule file read, in load order
  std::vector<Diagnostic> errors;
};

// Each path is a rule file or a directory whose *.yaml and *.yml files (not recursive) are
// loaded in name order. Rules of all files land in one list; ids must be unique across them.
LoadedRules LoadRulePaths(const std::vector<std::string>& paths);

// Parses one rule file's text; `file_name` is used in diagnostics. Appends to `out`.
void LoadRuleText(std::string_view text, const std::string& file_name, LoadedRules& out);

}  // namespace trainwatch::rules
