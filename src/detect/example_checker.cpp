#include "detect/example_checker.h"

#include <map>

#include "detect/stream_scan.h"
#include "rules/compiled_rules.h"
#include "rules/line_matcher.h"

namespace trainwatch::detect {
namespace {

// Examples are short, so a small framer keeps each run cheap.
constexpr std::size_t kExampleChunkBytes = 64 * 1024;

std::string Quote(const std::string& text) {
  constexpr std::size_t kMax = 120;
  std::string shown = text.size() > kMax ? text.substr(0, kMax) + "..." : text;
  for (char& c : shown) {
    if (c == '\n' || c == '\r') {
      c = ' ';
    }
  }
  return "\"" + shown + "\"";
}

// Whether `text` makes the rule at `index` fire, judged as the checker's header says.
Result<bool> Fires(const std::shared_ptr<const rules::CompiledRules>& compiled, std::size_t index,
                   const std::string& text) {
  auto matcher = rules::LineMatcher::Create(compiled);
  if (!matcher) {
    return matcher.error();
  }
  const rules::LineRule& line_rule = compiled->rules()[index];
  std::string input = text;
  if (input.empty() || input.back() != '\n') {
    input += '\n';
  }
  source::LineFramer framer(source::kDefaultMaxLineBytes, kExampleChunkBytes);
  if (std::holds_alternative<rules::ThresholdDetector>(line_rule.rule.detector)) {
    bool matched = false;
    std::vector<rules::SegmentMatch> matches;
    std::string_view rest = input;
    while (!rest.empty()) {
      auto space = framer.WritableSpace();
      const std::size_t n = std::min(space.size(), rest.size());
      std::copy_n(rest.data(), n, space.data());
      framer.Commit(n);
      rest.remove_prefix(n);
      while (const source::LineBatch* batch = framer.NextBatch(rest.empty())) {
        matches.clear();
        matcher->Match(*batch, matches);
        for (const auto& match : matches) {
          matched = matched || match.rule == index;
        }
      }
    }
    return matched;
  }
  detect::LineDetector detector(std::move(*matcher));
  bool fired = false;
  ScanText(input, framer, detector, detect::TimePoint(), [&](const detect::Event& event) {
    fired = fired || (event.rule_id == line_rule.rule.id && event.kind == line_rule.rule.kind);
  });
  return fired;
}

}  // namespace

std::vector<Diagnostic> CheckExamples(const std::vector<rules::Rule>& rules,
                                      std::vector<Diagnostic>* notes) {
  std::vector<Diagnostic> problems;
  std::map<std::string, std::shared_ptr<const rules::CompiledRules>> by_tag;
  for (const rules::Rule& rule : rules) {
    if (!rule.MatchesLines() || rule.tags.empty()) {
      continue;
    }
    // Every tag of the rule sees the same compiled regex; its first tag stands for all.
    const std::string& tag = rule.tags.front();
    auto& compiled = by_tag[tag];
    if (!compiled) {
      auto built = rules::CompiledRules::Build(rules, {tag}, notes);
      if (!built) {
        problems.push_back({rule.where, built.error().message});
        return problems;
      }
      compiled = *built;
    }
    std::size_t index = 0;
    while (compiled->rules()[index].rule.id != rule.id) {
      ++index;
    }
    for (const auto& [examples, should_fire] :
         {std::pair{&rule.fires, true}, std::pair{&rule.quiet, false}}) {
      for (const rules::Example& example : *examples) {
        auto fired = Fires(compiled, index, example.text);
        if (!fired) {
          problems.push_back({example.where, fired.error().message});
        } else if (*fired != should_fire) {
          problems.push_back(
              {example.where,
               "rule '" + rule.id + "': example " + Quote(example.text) +
                   (should_fire ? " should fire but does not" : " should stay quiet but fires")});
        }
      }
    }
  }
  return problems;
}

}  // namespace trainwatch::detect
