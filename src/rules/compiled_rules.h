// CompiledRules: the line rules of a rule set that apply to one source tag, compiled for
// matching: each regex as an RE2 (the judge) and all of them together as one Hyperscan
// database in prefilter mode (the fast pass that says which few rules may match which
// lines). Immutable after Build; share it between threads, each with its own LineMatcher.
#pragma once

#include <hs/hs.h>
#include <re2/re2.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/source_location.h"
#include "rules/rule.h"

namespace trainwatch::rules {

struct HsDatabaseDeleter {
  void operator()(hs_database_t* db) const { hs_free_database(db); }
};
using HsDatabase = std::unique_ptr<hs_database_t, HsDatabaseDeleter>;

// One line rule ready to match.
struct LineRule {
  Rule rule;
  std::unique_ptr<RE2> match;
  std::unique_ptr<RE2> unless;  // null when the rule has none
  bool prefiltered = true;      // false: Hyperscan refused it, RE2 runs on every segment
  // multiline: python-traceback; its `unless` applies to the final exception line, so the
  // matcher leaves it to the detector.
  bool multiline = false;
};

class CompiledRules {
 public:
  // Compiles the pattern and threshold rules that carry any of `tags` (a source's tags). A
  // pattern Hyperscan cannot
  // take (a construct outside its syntax) still works, RE2 alone checks it on every segment;
  // each such rule adds a note to `notes`, since it slows every scan down.
  // With `cache_dir`, compiled databases are loaded from and saved to that directory (see
  // database_cache.h). REQUIRES: the rules were loaded without errors (their regexes compile).
  static Result<std::shared_ptr<const CompiledRules>> Build(const std::vector<Rule>& rules,
                                                            const std::vector<std::string>& tags,
                                                            std::vector<Diagnostic>* notes,
                                                            const std::string& cache_dir = {});

  const std::vector<LineRule>& rules() const { return rules_; }
  // Null when no rule is prefiltered.
  const hs_database_t* database() const { return database_.get(); }
  const std::vector<std::size_t>& unfiltered() const { return unfiltered_; }

 private:
  std::vector<LineRule> rules_;
  HsDatabase database_;
  std::vector<std::size_t> unfiltered_;  // indexes into rules_
};

}  // namespace trainwatch::rules
