// SourceRules: the rules that apply to one source (those carrying any of its tags), ready to
// run: the line rules compiled for matching, the others sorted by the detector that runs them
// (progress bars, silence, a process's exit). Immutable once built; a reload builds new ones.
// Any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/source_location.h"
#include "rules/compiled_rules.h"
#include "rules/rule.h"

namespace trainwatch::rules {

struct SourceRules {
  std::shared_ptr<const CompiledRules> lines;
  std::vector<Rule> progress;
  std::vector<Rule> pace;
  std::vector<Rule> silence;
  std::vector<Rule> exit;
};

// Silence rules shorter than the startup grace of a progress rule of the same source: a job that
// compiles its graph silently for longer than the silence (a bar at 0% prints nothing) would be
// reported as a hang the grace was meant to forgive. One warning each, at the silence rule.
std::vector<Diagnostic> SilenceWithinGrace(const SourceRules& rules,
                                           const std::string& source_name);

// Fails, naming the source, when the line rules cannot be compiled. Notes about rules that run
// slowly, or silence rules shorter than a startup grace, go to `notes`; compiled databases are
// cached in `cache_dir` (see CompiledRules).
Result<SourceRules> BuildSourceRules(const std::vector<Rule>& rules,
                                     const std::vector<std::string>& tags,
                                     const std::string& source_name, const std::string& cache_dir,
                                     std::vector<Diagnostic>& notes);

}  // namespace trainwatch::rules
