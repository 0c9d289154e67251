// A site's stack rules (`stack:` rules of kind hang in its rule files, rules/README.md): what a
// rank's main thread shows that means a known hang, and the sentence a person needs for it.
// JudgeStacks tries them before its built-in verdicts, so a site can name its own hangs (a
// checkpoint read from a storage that stalls, a barrier of its own framework). Compiled once
// per (re)load; pure; any thread.
#pragma once

#include <re2/re2.h>

#include <memory>
#include <string>
#include <vector>

#include "collect/stack_text.h"
#include "core/source_location.h"
#include "rules/rule.h"

namespace trainwatch::diagnose {

struct StackRule {
  std::string id;
  rules::Verdict verdict;
  std::shared_ptr<const RE2> function;  // partial match on a frame's function
  std::shared_ptr<const RE2> file;      // and on its file; null: any file
  std::string says;                     // with {rank}, {function}, {file}, {line}
};

using StackRules = std::vector<StackRule>;

// The stack rules among `rules`, compiled (their regexes were checked when loaded).
std::shared_ptr<const StackRules> CompileStackRules(const std::vector<rules::Rule>& rules);

// The innermost frame of `python` (a main thread's, innermost first) that `rule` matches;
// null when none does.
const collect::StackFrame* MatchStackRule(const StackRule& rule,
                                          const std::vector<collect::StackFrame>& python);

// The rule's sentence for `rank` ("rank 3") and the frame it matched.
std::string StackRuleSays(const StackRule& rule, const std::string& rank,
                          const collect::StackFrame& frame);

// The stack rules' examples checked: each `fires` example (a main thread's py-bt, as gdb
// prints it: `  File "/job/data.py", line 41, in fetch` lines, innermost first) must match,
// each `quiet` one must not. One problem per failing example, at the example, added to
// `problems` (beside the line rules' from detect::CheckExamples).
void CheckStackExamples(const std::vector<rules::Rule>& rules, std::vector<Diagnostic>& problems);

}  // namespace trainwatch::diagnose
