// CompiledRules: the line rules of a rule set that apply to one source tag, compiled for
// matching: each `match` regex as an RE2 (the judge) and all of them together behind one
// prefilter (core/multi_regex.h, the fast pass that says which few rules may match which
// lines). Immutable after Build; share it between threads, each with its own LineMatcher.
#pragma once

#include <re2/re2.h>

#include <memory>
#include <string>
#include <vector>

#include "core/lazy_regex.h"
#include "core/multi_regex.h"
#include "core/result.h"
#include "core/source_location.h"
#include "rules/rule.h"

namespace trainwatch::rules {

// One line rule ready to match.
struct LineRule {
  Rule rule;
  const LazyRegex* match = nullptr;   // owned by CompiledRules::regexes()
  std::unique_ptr<LazyRegex> unless;  // null when the rule has none
  // multiline: python-traceback; its `unless` applies to the final exception line, so the
  // matcher leaves it to the detector.
  bool multiline = false;
};

class CompiledRules {
 public:
  static constexpr std::size_t kMaxUnfilteredPatternBytes = 16 * 1024;
  // Compiles the pattern and threshold rules that carry any of `tags` (a source's tags). A
  // pattern the prefilter cannot take (a construct outside Hyperscan's syntax) still works,
  // RE2 alone checks it on every segment; each such rule adds a note to `notes`, since it
  // slows every scan down. Such a pattern longer than kMaxUnfilteredPatternBytes (a word
  // list of thousands of alternatives Hyperscan refuses) is an error naming its file and line.
  // With `cache_dir`, compiled databases are loaded from and saved to that directory (see
  // core/prefilter_cache.h). REQUIRES: the rules were loaded without errors (their regexes
  // compile).
  static Result<std::shared_ptr<const CompiledRules>> Build(const std::vector<Rule>& rules,
                                                            const std::vector<std::string>& tags,
                                                            std::vector<Diagnostic>* notes,
                                                            const std::string& cache_dir = {});

  const std::vector<LineRule>& rules() const { return rules_; }
  // One pattern per rule, at the rule's index: each rule's `match`.
  const MultiRegex& regexes() const { return regexes_; }
  // Indexes into rules() of the rules RE2 checks on every segment.
  const std::vector<std::size_t>& unfiltered() const { return regexes_.unfiltered(); }

 private:
  std::vector<LineRule> rules_;
  MultiRegex regexes_;
};

}  // namespace trainwatch::rules
