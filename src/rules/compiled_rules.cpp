#include "rules/compiled_rules.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "rules/database_cache.h"
#include "rules/regex_options.h"

namespace trainwatch::rules {
namespace {

struct CompileErrorDeleter {
  void operator()(hs_compile_error_t* error) const { hs_free_compile_error(error); }
};

// MULTILINE: '^' and '$' match at every '\n', and the framer turned '\r' into '\n', so
// anchors work per segment as they do in RE2 on the segment alone. PREFILTER: Hyperscan
// may report a superset of matches (it accepts more constructs that way); RE2 confirms.
constexpr unsigned kFlags = HS_FLAG_MULTILINE | HS_FLAG_PREFILTER;

struct CompileAttempt {
  HsDatabase database;
  int failed_index = -1;  // which expression Hyperscan refused, or -1
  std::string message;
};

CompileAttempt TryCompile(const std::vector<const char*>& expressions,
                          const std::vector<unsigned>& ids, const std::string& cache_dir) {
  CompileAttempt attempt;
  std::vector<unsigned> flags(expressions.size(), kFlags);
  const std::uint64_t key = DatabaseKey(expressions, flags, ids);
  if (HsDatabase cached = LoadCachedDatabase(cache_dir, key)) {
    attempt.database = std::move(cached);
    return attempt;
  }
  hs_database_t* db = nullptr;
  hs_compile_error_t* raw_error = nullptr;
  const hs_error_t rc = hs_compile_multi(expressions.data(), flags.data(), ids.data(),
                                         static_cast<unsigned>(expressions.size()), HS_MODE_BLOCK,
                                         nullptr, &db, &raw_error);
  std::unique_ptr<hs_compile_error_t, CompileErrorDeleter> error(raw_error);
  if (rc == HS_SUCCESS) {
    attempt.database.reset(db);
    StoreCachedDatabase(cache_dir, key, db);
    return attempt;
  }
  attempt.failed_index = error ? error->expression : -1;
  attempt.message = error && error->message ? error->message : "unknown Hyperscan error";
  return attempt;
}

// The pattern as Hyperscan must see it to propose at least every segment RE2 matches, or
// nullopt when no such form is known. RE2 judges one segment, where \A and \z are its
// start and end; in a batch those are ^ and $ in multiline mode. Hyperscan does not fold
// the case of bytes >= 0x80 as RE2's Latin-1 mode does, so a case-insensitive pattern with
// such bytes goes to RE2 alone.
std::optional<std::string> ForHyperscan(const std::string& regex, std::string* why) {
  std::string out;
  out.reserve(regex.size());
  bool high_bytes = false;
  bool caseless = false;
  for (std::size_t i = 0; i < regex.size(); ++i) {
    const char c = regex[i];
    high_bytes = high_bytes || static_cast<unsigned char>(c) >= 0x80;
    if (c == '\\' && i + 1 < regex.size() && regex[i + 1] == 'Q') {
      // \Q...\E quotes literally: copy it as it is, \A and \z inside stay letters.
      const std::size_t end = regex.find("\\E", i + 2);
      const std::size_t stop = end == std::string::npos ? regex.size() : end + 2;
      for (std::size_t k = i; k < stop; ++k) {
        high_bytes = high_bytes || static_cast<unsigned char>(regex[k]) >= 0x80;
      }
      out.append(regex, i, stop - i);
      i = stop - 1;
      continue;
    }
    if (c == '\\' && i + 1 < regex.size()) {
      const char next = regex[++i];
      if (next == 'A') {
        out += '^';
      } else if (next == 'z') {
        out += '$';
      } else {
        out += c;
        out += next;
        // Escapes that can name a byte >= 0x80: \xE9, \x{E9}, octal \351, classes \pL.
        high_bytes = high_bytes || static_cast<unsigned char>(next) >= 0x80 || next == 'x' ||
                     next == 'p' || next == 'P' || (next >= '0' && next <= '7');
      }
      continue;
    }
    if (c == '(' && i + 1 < regex.size() && regex[i + 1] == '?') {
      // A flag group, "(?i)" "(?si:" "(?m-i)": note whether it turns case folding on.
      for (std::size_t k = i + 2; k < regex.size() && regex[k] != ')' && regex[k] != ':'; ++k) {
        if (regex[k] == '-') {
          break;
        }
        caseless = caseless || regex[k] == 'i';
      }
    }
    out += c;
  }
  if (high_bytes && caseless) {
    *why = "case-insensitive with non-ASCII bytes, which it would not fold";
    return std::nullopt;
  }
  return out;
}

}  // namespace

Result<std::shared_ptr<const CompiledRules>> CompiledRules::Build(
    const std::vector<Rule>& rules, const std::vector<std::string>& tags,
    std::vector<Diagnostic>* notes, const std::string& cache_dir) {
  if (hs_valid_platform() != HS_SUCCESS) {
    return Error{"this CPU lacks the SSSE3 instructions the Hyperscan matcher needs"};
  }
  auto compiled = std::make_shared<CompiledRules>();
  std::vector<const Pattern*> patterns;
  for (const Rule& rule : rules) {
    const bool applies = std::any_of(tags.begin(), tags.end(),
                                     [&](const std::string& tag) { return rule.HasTag(tag); });
    if (!applies || !rule.MatchesLines()) {
      continue;
    }
    LineRule line_rule;
    line_rule.rule = rule;
    const Pattern* match = nullptr;
    const std::optional<Pattern>* unless = nullptr;
    if (const auto* pattern = std::get_if<PatternDetector>(&rule.detector)) {
      match = &pattern->match;
      unless = &pattern->unless;
      line_rule.multiline = pattern->multiline != Multiline::kNone;
    } else {
      const auto& threshold = std::get<ThresholdDetector>(rule.detector);
      match = &threshold.match;
      unless = &threshold.unless;
    }
    line_rule.match = std::make_unique<RE2>(match->regex, RegexOptions());
    if (!line_rule.match->ok()) {
      return Error{match->where.file + ":" + std::to_string(match->where.line) + ": rule '" +
                   rule.id + "': " + line_rule.match->error()};
    }
    if (unless->has_value()) {
      line_rule.unless = std::make_unique<RE2>((*unless)->regex, RegexOptions());
      if (!line_rule.unless->ok()) {
        return Error{"rule '" + rule.id + "': unless: " + line_rule.unless->error()};
      }
    }
    compiled->rules_.push_back(std::move(line_rule));
    patterns.push_back(match);
  }

  // Compile all prefilterable patterns into one database; drop any Hyperscan refuses and
  // try again, so one exotic rule never costs the others their fast path.
  auto leave_to_re2 = [&](std::size_t index, const std::string& why) {
    compiled->rules_[index].prefiltered = false;
    compiled->unfiltered_.push_back(index);
    if (notes != nullptr) {
      notes->push_back({patterns[index]->where,
                        "note: rule '" + compiled->rules_[index].rule.id +
                            "': the fast matcher cannot take this pattern (" + why +
                            "), so it is checked on every line, which slows every scan down"});
    }
  };
  std::vector<std::string> vectorscan_forms(compiled->rules_.size());
  std::vector<std::size_t> candidates;
  for (std::size_t i = 0; i < compiled->rules_.size(); ++i) {
    std::string why;
    if (auto form = ForHyperscan(patterns[i]->regex, &why)) {
      vectorscan_forms[i] = std::move(*form);
      candidates.push_back(i);
    } else {
      leave_to_re2(i, why);
    }
  }
  while (!candidates.empty()) {
    std::vector<const char*> expressions;
    std::vector<unsigned> ids;
    for (std::size_t index : candidates) {
      expressions.push_back(vectorscan_forms[index].c_str());
      ids.push_back(static_cast<unsigned>(index));
    }
    CompileAttempt attempt = TryCompile(expressions, ids, cache_dir);
    if (attempt.database) {
      compiled->database_ = std::move(attempt.database);
      break;
    }
    if (attempt.failed_index < 0 ||
        static_cast<std::size_t>(attempt.failed_index) >= candidates.size()) {
      return Error{"cannot compile the rules: " + attempt.message};
    }
    leave_to_re2(candidates[static_cast<std::size_t>(attempt.failed_index)], attempt.message);
    candidates.erase(candidates.begin() + attempt.failed_index);
  }
  return std::shared_ptr<const CompiledRules>(std::move(compiled));
}

}  // namespace trainwatch::rules
