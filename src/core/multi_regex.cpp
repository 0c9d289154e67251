#include "core/multi_regex.h"

#include <hs/hs.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <utility>

#include "core/prefilter_cache.h"
#include "core/prefilter_compiler.h"
#include "core/prefilter_form.h"

namespace trainwatch {
namespace {

unsigned FlagsFor(const MultiRegexOptions& options) {
  // PREFILTER: Hyperscan may report a superset of matches (it accepts more constructs that
  // way); RE2 confirms.
  unsigned flags = HS_FLAG_PREFILTER;
  if (options.segmented) {
    // '^' and '$' match at every '\n' (the framer turned '\r' into '\n' too), so anchors work
    // per segment as they do in RE2 on the segment alone.
    flags |= HS_FLAG_MULTILINE;
  }
  if (options.first_candidate_only) {
    flags |= HS_FLAG_SINGLEMATCH;
  }
  return flags;
}

struct CompileAttempt {
  HsDatabase database;
  int failed_index = -1;  // which expression Hyperscan refused, or -1
  std::string message;
};

CompileAttempt TryCompile(const std::vector<const char*>& expressions,
                          const std::vector<unsigned>& flags, const std::vector<unsigned>& ids,
                          const std::string& cache_dir, bool in_helper) {
  CompileAttempt attempt;
  const DatabaseKey key = DatabaseKeyOf(expressions, flags, ids);
  if (HsDatabase cached = LoadCachedDatabase(cache_dir, key)) {
    attempt.database = std::move(cached);
    return attempt;
  }
  PrefilterCompileResult compiled = CompilePrefilter({expressions, flags, ids}, in_helper);
  if (compiled.database) {
    if (compiled.serialized.empty()) {
      StoreCachedDatabase(cache_dir, key, compiled.database.get());
    } else {
      StoreCachedBytes(cache_dir, key, compiled.serialized);
    }
    attempt.database = std::move(compiled.database);
    return attempt;
  }
  attempt.failed_index = compiled.failed_index;
  attempt.message = std::move(compiled.message);
  return attempt;
}

}  // namespace

bool MultiRegex::PrefilterSupported() { return hs_valid_platform() == HS_SUCCESS; }

MultiRegex MultiRegex::Build(std::vector<RegexPattern> patterns, const MultiRegexOptions& options) {
  MultiRegex set;
  set.prefiltered_.assign(patterns.size(), 0);
  for (RegexPattern& pattern : patterns) {
    set.literals_.push_back(LiteralOf(pattern.regex->pattern()));
    set.regexes_.push_back(std::make_unique<LazyRegex>(std::move(pattern.regex)));
  }
  if (!options.prefilter || !PrefilterSupported()) {
    const std::string why =
        options.prefilter ? "this CPU lacks the SSSE3 instructions the Hyperscan matcher needs"
                          : "the prefilter is off";
    if (options.prefilter && !patterns.empty()) {
      set.prefilter_error_ = why;
    }
    for (std::size_t i = 0; i < patterns.size(); ++i) {
      set.LeaveToRe2(i, why);
    }
    return set;
  }

  std::vector<std::string> forms(patterns.size());
  std::vector<std::size_t> candidates;
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    const std::string& source =
        patterns[i].prefilter.empty() ? set.regexes_[i]->pattern() : patterns[i].prefilter;
    std::string why;
    if (auto form = PrefilterForm(source, options.segmented, &why)) {
      forms[i] = std::move(*form);
      candidates.push_back(i);
    } else {
      set.LeaveToRe2(i, why);
    }
  }
  // Compile all candidates into one database; drop any Hyperscan refuses and try again.
  while (!candidates.empty()) {
    std::vector<const char*> expressions;
    std::vector<unsigned> ids;
    for (std::size_t index : candidates) {
      expressions.push_back(forms[index].c_str());
      ids.push_back(static_cast<unsigned>(index));
    }
    const std::vector<unsigned> flags(expressions.size(), FlagsFor(options));
    CompileAttempt attempt =
        TryCompile(expressions, flags, ids, options.cache_dir, options.compile_in_helper);
    if (attempt.database) {
      set.database_ = std::move(attempt.database);
      for (std::size_t index : candidates) {
        set.prefiltered_[index] = 1;
      }
      break;
    }
    if (attempt.failed_index < 0 ||
        static_cast<std::size_t>(attempt.failed_index) >= candidates.size()) {
      // Not one pattern's fault (out of memory, a database too large): no prefilter at all.
      set.prefilter_error_ = attempt.message;
      for (std::size_t index : candidates) {
        set.LeaveToRe2(index, attempt.message);
      }
      break;
    }
    set.LeaveToRe2(candidates[static_cast<std::size_t>(attempt.failed_index)], attempt.message);
    candidates.erase(candidates.begin() + attempt.failed_index);
  }
  // A prefiltered pattern's RE2 judges only what the prefilter proposes: compiled again then.
  for (std::size_t i = 0; i < set.regexes_.size(); ++i) {
    if (set.prefiltered_[i] != 0) {
      set.regexes_[i]->Release();
    }
  }
  return set;
}

MultiRegex::Literal MultiRegex::LiteralOf(std::string_view regex) {
  Literal literal;
  constexpr std::string_view kCaseless = "(?i)";
  if (regex.starts_with(kCaseless)) {
    literal.caseless = true;
    regex.remove_prefix(kCaseless.size());
  }
  // Letters, digits, spaces and a few marks that are never operators outside a class: what RE2
  // matches as themselves. Anything else (even an escaped dot) leaves the pattern to RE2.
  const bool plain = !regex.empty() && std::all_of(regex.begin(), regex.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == ' ' || c == '_' || c == '-' ||
           c == ':' || c == ',' || c == '\'' || c == '"' || c == '=' || c == '/';
  });
  if (!plain) {
    return {};
  }
  literal.text = regex;
  if (literal.caseless) {
    for (char& c : literal.text) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return literal;
}

bool MultiRegex::MatchesEndingAt(std::size_t pattern, std::string_view text,
                                 std::size_t end) const {
  const Literal& literal = literals_[pattern];
  const std::size_t size = literal.text.size();
  if (size != 0 && end >= size && end <= text.size()) {
    const std::string_view there = text.substr(end - size, size);
    const bool found =
        literal.caseless ? std::equal(there.begin(), there.end(), literal.text.begin(),
                                      [](char a, char b) {
                                        // ASCII folding without a locale call: a letter of the
                                        // literal matches either case, any other byte only itself.
                                        return a == b || (b >= 'a' && b <= 'z' && (a | 0x20) == b);
                                      })
                         : there == literal.text;
    if (found) {
      return true;
    }
  }
  return Matches(pattern, text);
}

void MultiRegex::LeaveToRe2(std::size_t pattern, std::string why) {
  unfiltered_.push_back(pattern);
  fallbacks_.push_back({pattern, std::move(why)});
}

}  // namespace trainwatch
