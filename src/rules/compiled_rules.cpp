#include "rules/compiled_rules.h"

#include <algorithm>
#include <optional>

#include "core/regex_options.h"
#include "core/source_location.h"

namespace trainwatch::rules {

Result<std::shared_ptr<const CompiledRules>> CompiledRules::Build(
    const std::vector<Rule>& rules, const std::vector<std::string>& tags,
    std::vector<Diagnostic>* notes, const std::string& cache_dir) {
  auto compiled = std::make_shared<CompiledRules>();
  std::vector<const Pattern*> patterns;
  std::vector<RegexPattern> regexes;
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
    } else if (const auto* metric = std::get_if<MetricDetector>(&rule.detector)) {
      match = &metric->match;
      unless = &metric->unless;
    } else if (const auto* spread = std::get_if<SpreadDetector>(&rule.detector)) {
      match = &spread->match;
      unless = &spread->unless;
    } else {
      const auto& threshold = std::get<ThresholdDetector>(rule.detector);
      match = &threshold.match;
      unless = &threshold.unless;
    }
    auto match_regex = std::make_unique<const RE2>(match->regex, RegexOptions());
    if (!match_regex->ok()) {
      return Error{match->where.file + ":" + std::to_string(match->where.line) + ": rule '" +
                   rule.id + "': " + match_regex->error()};
    }
    if (unless->has_value()) {
      auto unless_regex = std::make_unique<const RE2>((*unless)->regex, RegexOptions());
      if (!unless_regex->ok()) {
        return Error{"rule '" + rule.id + "': unless: " + unless_regex->error()};
      }
      // Judges only the lines the rule matched: compiled again at the first.
      line_rule.unless = std::make_unique<LazyRegex>(std::move(unless_regex));
      line_rule.unless->Release();
    }
    compiled->rules_.push_back(std::move(line_rule));
    regexes.push_back({std::move(match_regex), {}});
    patterns.push_back(match);
  }

  // A batch holds many segments, each judged alone, and a rule may match in several of them:
  // the set is segmented and reports every place a match may end.
  MultiRegexOptions options;
  options.segmented = true;
  options.cache_dir = cache_dir;
  compiled->regexes_ = MultiRegex::Build(std::move(regexes), options);
  for (std::size_t i = 0; i < compiled->rules_.size(); ++i) {
    compiled->rules_[i].match = &compiled->regexes_.lazy_regex(i);
  }
  if (!compiled->regexes_.prefilter_error().empty()) {
    return Error{"cannot compile the rules: " + compiled->regexes_.prefilter_error()};
  }
  for (const MultiRegex::Fallback& fallback : compiled->regexes_.fallbacks()) {
    const Pattern& pattern = *patterns[fallback.pattern];
    if (pattern.regex.size() > kMaxUnfilteredPatternBytes) {
      // A large alternation (a 50,000-word list) that Hyperscan refuses would run on RE2 for
      // every line: 9 s per 100 MB measured, every source slowed. Refused, not noted.
      std::string message = "rule '";
      message += compiled->rules_[fallback.pattern].rule.id;
      message += "': its pattern (";
      message += std::to_string(pattern.regex.size());
      message += " bytes) is too large for the fast matcher (";
      message += fallback.why;
      message +=
          "); checked on every line by RE2 instead, it would slow every scan of its "
          "sources down (a 50,000-word list: 9 s per 100 MB); split it into smaller rules";
      const std::string text = FormatDiagnostic({pattern.where, message});
      return Error{text};
    }
    if (notes != nullptr) {
      notes->push_back({patterns[fallback.pattern]->where,
                        "note: rule '" + compiled->rules_[fallback.pattern].rule.id +
                            "': the fast matcher cannot take this pattern (" + fallback.why +
                            "), so it is checked on every line, which slows every scan down"});
    }
  }
  return std::shared_ptr<const CompiledRules>(std::move(compiled));
}

}  // namespace trainwatch::rules
