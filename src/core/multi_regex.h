// MultiRegex: a set of RE2 patterns (the judges) with one Hyperscan database in prefilter
// mode in front of them (the fast pass that says which few patterns may match where). Used
// by the rules (one set per source) and the redactor. Patterns the prefilter cannot take run
// on RE2 alone, and the set says which and why. Immutable after Build: share it between
// threads, each scanning with its own MultiRegexScanner (core/multi_regex_scanner.h).
#pragma once

#include <re2/re2.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/hyperscan_handles.h"
#include "core/lazy_regex.h"

namespace trainwatch {

// One pattern of a set.
struct RegexPattern {
  // Compiled by the caller with RegexOptions() (core/regex_options.h) and checked for ok(),
  // so each caller words its own errors.
  std::unique_ptr<const RE2> regex;
  // What the prefilter scans for; it must match wherever `regex` does. Empty: derived from
  // the regex by PrefilterForm (core/prefilter_form.h). A hand-written form trades precision
  // for speed, or spells out what the derivation cannot see.
  std::string prefilter;
};

struct MultiRegexOptions {
  // Each scanned text is many '\n'-separated segments, each judged alone (the rules' line
  // batches): anchors apply per segment. Otherwise a text is judged whole (the redactor).
  bool segmented = false;
  // One candidate per pattern and scan is all the caller needs (the redactor asks "does
  // this pattern occur at all"); otherwise every place a match may end is reported.
  bool first_candidate_only = false;
  // false: no prefilter, every pattern on RE2 alone (the reference the fast path is tested
  // against). Also what a CPU without SSSE3 gets.
  bool prefilter = true;
  // Where compiled databases are loaded from and saved to (core/prefilter_cache.h); empty:
  // always compile.
  std::string cache_dir;
  // false: compile in this process even where a compile helper is set
  // (core/prefilter_compiler.h), for a small set needed at once.
  bool compile_in_helper = true;
};

class MultiRegex {
 public:
  // A pattern that runs on RE2 alone, and why (the prefilter compiler's message, or the
  // reason PrefilterForm gave).
  struct Fallback {
    std::size_t pattern = 0;
    std::string why;
  };

  // Whether this CPU can run the prefilter at all (Hyperscan needs SSSE3).
  static bool PrefilterSupported();

  // Compiles the prefilter for `patterns`, whose order gives the pattern indexes. A pattern
  // the prefilter cannot take goes to RE2 alone and the others are compiled again without it,
  // so one exotic pattern never costs the others their fast path. Never fails: at worst
  // (no SSSE3, a compiler error not tied to one pattern) every pattern runs on RE2 alone, and
  // prefilter_error() says why. REQUIRES: every regex is non-null and ok().
  static MultiRegex Build(std::vector<RegexPattern> patterns, const MultiRegexOptions& options);

  MultiRegex() = default;
  MultiRegex(MultiRegex&&) = default;
  MultiRegex& operator=(MultiRegex&&) = default;

  std::size_t size() const { return regexes_.size(); }
  // The pattern's RE2: compiled at its first use for a prefiltered pattern (most never judge
  // a text), kept from the start for one that runs on every text.
  const RE2& regex(std::size_t pattern) const { return regexes_[pattern]->get(); }
  // The same, for a holder that outlives no set: its address is stable while the set lives.
  const LazyRegex& lazy_regex(std::size_t pattern) const { return *regexes_[pattern]; }
  // RE2's verdict: whether `pattern` matches somewhere in `text`.
  bool Matches(std::size_t pattern, std::string_view text) const {
    return RE2::PartialMatch(text, regex(pattern));
  }
  // The same verdict, where the prefilter saw a match of `pattern` end at byte `end` of `text`.
  // A pattern that is a plain word or phrase ("(?i)loss", "Segmentation fault") is checked
  // there, byte for byte, with no RE2 to run (a metric rule's "loss" is proposed on every
  // refresh of a tqdm bar); any other, or one not found there, goes to RE2.
  bool MatchesEndingAt(std::size_t pattern, std::string_view text, std::size_t end) const;
  // false: the prefilter never proposes this pattern; it may match in any text.
  bool prefiltered(std::size_t pattern) const { return prefiltered_[pattern] != 0; }
  std::size_t prefiltered_count() const { return regexes_.size() - unfiltered_.size(); }
  // The patterns that run on RE2 alone, in the order they were found out.
  const std::vector<std::size_t>& unfiltered() const { return unfiltered_; }
  const std::vector<Fallback>& fallbacks() const { return fallbacks_; }
  // Why there is no prefilter at all although some pattern could have had one; empty when
  // there is one or nothing was asked of it.
  const std::string& prefilter_error() const { return prefilter_error_; }

 private:
  friend class MultiRegexScanner;

  void LeaveToRe2(std::size_t pattern, std::string why);

  // A pattern that is a literal: its text (lower case when caseless), else empty.
  struct Literal {
    std::string text;
    bool caseless = false;
  };
  static Literal LiteralOf(std::string_view regex);

  std::vector<std::unique_ptr<LazyRegex>> regexes_;
  std::vector<char> prefiltered_;  // per pattern
  std::vector<Literal> literals_;  // per pattern
  std::vector<std::size_t> unfiltered_;
  std::vector<Fallback> fallbacks_;
  std::string prefilter_error_;
  HsDatabase database_;  // null when no pattern is prefiltered
};

}  // namespace trainwatch
