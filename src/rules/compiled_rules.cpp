#include "rules/compiled_rules.h"

#include <algorithm>
#include <cstring>

#include "rules/regex_options.h"

namespace trainwatch::rules {
namespace {

struct CompileErrorDeleter {
  void operator()(hs_compile_error_t* error) const { hs_free_compile_error(error); }
};

// MULTILINE: '^' and '$' match at every '\n', and the framer turned '\r' into '\n', so
// anchors work per segment as they do in RE2 on the segment alone. PREFILTER: Vectorscan
// may report a superset of matches (it accepts more constructs that way); RE2 confirms.
constexpr unsigned kFlags = HS_FLAG_MULTILINE | HS_FLAG_PREFILTER;

struct CompileAttempt {
  HsDatabase database;
  int failed_index = -1;  // which expression Vectorscan refused, or -1
  std::string message;
};

CompileAttempt TryCompile(const std::vector<const char*>& expressions,
                          const std::vector<unsigned>& ids) {
  CompileAttempt attempt;
  std::vector<unsigned> flags(expressions.size(), kFlags);
  hs_database_t* db = nullptr;
  hs_compile_error_t* raw_error = nullptr;
  const hs_error_t rc = hs_compile_multi(expressions.data(), flags.data(), ids.data(),
                                         static_cast<unsigned>(expressions.size()), HS_MODE_BLOCK,
                                         nullptr, &db, &raw_error);
  std::unique_ptr<hs_compile_error_t, CompileErrorDeleter> error(raw_error);
  if (rc == HS_SUCCESS) {
    attempt.database.reset(db);
    return attempt;
  }
  attempt.failed_index = error ? error->expression : -1;
  attempt.message = error && error->message ? error->message : "unknown Vectorscan error";
  return attempt;
}

}  // namespace

Result<std::shared_ptr<const CompiledRules>> CompiledRules::Build(
    const std::vector<Rule>& rules, const std::vector<std::string>& tags,
    std::vector<Diagnostic>* notes) {
  if (hs_valid_platform() != HS_SUCCESS) {
    return Error{"this CPU lacks the SSSE3 instructions the Vectorscan matcher needs"};
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

  // Compile all prefilterable patterns into one database; drop any Vectorscan refuses and
  // try again, so one exotic rule never costs the others their fast path.
  std::vector<std::size_t> candidates(compiled->rules_.size());
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    candidates[i] = i;
  }
  while (!candidates.empty()) {
    std::vector<const char*> expressions;
    std::vector<unsigned> ids;
    for (std::size_t index : candidates) {
      expressions.push_back(patterns[index]->regex.c_str());
      ids.push_back(static_cast<unsigned>(index));
    }
    CompileAttempt attempt = TryCompile(expressions, ids);
    if (attempt.database) {
      compiled->database_ = std::move(attempt.database);
      break;
    }
    if (attempt.failed_index < 0 ||
        static_cast<std::size_t>(attempt.failed_index) >= candidates.size()) {
      return Error{"cannot compile the rules: " + attempt.message};
    }
    const std::size_t refused = candidates[static_cast<std::size_t>(attempt.failed_index)];
    compiled->rules_[refused].prefiltered = false;
    compiled->unfiltered_.push_back(refused);
    if (notes != nullptr) {
      notes->push_back({patterns[refused]->where,
                        "note: rule '" + compiled->rules_[refused].rule.id +
                            "': the fast matcher cannot take this pattern (" + attempt.message +
                            "), so it is checked on every line, which slows every scan down"});
    }
    candidates.erase(candidates.begin() + attempt.failed_index);
  }
  return std::shared_ptr<const CompiledRules>(std::move(compiled));
}

}  // namespace trainwatch::rules
