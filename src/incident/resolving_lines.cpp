#include "incident/resolving_lines.h"

#include <spdlog/spdlog.h>

#include <variant>

#include "core/regex_options.h"

namespace trainwatch::incident {
namespace {

std::shared_ptr<const RE2> PatternOf(const rules::Rule& rule) {
  const auto* pattern = std::get_if<rules::PatternDetector>(&rule.detector);
  if (pattern == nullptr) {
    return nullptr;
  }
  auto re = std::make_shared<const RE2>(pattern->match.regex, RegexOptions());
  return re->ok() ? re : nullptr;
}

// The first capture group of `re` in `text`; nullopt when `re` has none or does not match.
std::optional<std::string> FirstGroup(const RE2& re, std::string_view text) {
  if (re.NumberOfCapturingGroups() < 1) {
    return std::nullopt;
  }
  std::string group;
  if (!RE2::PartialMatch(text, re, &group)) {
    return std::nullopt;
  }
  return group;
}

}  // namespace

ResolvingLines::ResolvingLines(const std::vector<rules::Rule>& rules) {
  std::map<std::string, const rules::Rule*, std::less<>> by_id;
  for (const rules::Rule& rule : rules) {
    by_id.emplace(rule.id, &rule);
  }
  for (const rules::Rule& rule : rules) {
    if (rule.resolves.empty()) {
      continue;
    }
    const auto target = by_id.find(rule.resolves);
    by_rule_[rule.id] = {rule.resolves, PatternOf(rule),
                         target == by_id.end() ? nullptr : PatternOf(*target->second)};
  }
}

bool ResolvingLines::SameFailure(const Resolver& resolver, std::string_view ok_text,
                                 std::string_view text) {
  const bool both_name_it = resolver.own && resolver.own->NumberOfCapturingGroups() >= 1 &&
                            resolver.target_pattern &&
                            resolver.target_pattern->NumberOfCapturingGroups() >= 1;
  if (!both_name_it) {
    return true;  // nothing names the failure: the rule and source alone tell
  }
  // Fails closed: a failure whose name cannot be read again (a text cut or redacted) waits for
  // an operator's ack rather than ending with another's line.
  const std::optional<std::string> key = FirstGroup(*resolver.own, ok_text);
  const std::optional<std::string> fired = FirstGroup(*resolver.target_pattern, text);
  return key && fired && *fired == *key;
}

bool ResolvingLines::Resolve(const detect::Firing& firing, ops::IncidentLifecycle& lifecycle,
                             detect::WallTime wall_now) const {
  const auto resolver = by_rule_.find(firing.event.rule_id);
  if (resolver == by_rule_.end()) {
    return false;
  }
  const Resolver& r = resolver->second;
  auto same_failure = [&](std::string_view text) {
    return SameFailure(r, firing.event.text, text);
  };
  if (lifecycle.ResolveByLine(
          r.target, firing.source, same_failure,
          "a line said it ended (" + firing.event.rule_id + "): " + firing.event.text,
          wall_now) == 0) {
    spdlog::debug("{}: {} resolves no open incident", firing.event.rule_id, firing.event.text);
  }
  return true;
}

bool ResolvingLines::CameBack(const detect::Firing& ok, const detect::Firing& failure) const {
  const auto resolver = by_rule_.find(ok.event.rule_id);
  return resolver != by_rule_.end() && resolver->second.target == failure.event.rule_id &&
         ok.source == failure.source &&
         SameFailure(resolver->second, ok.event.text, failure.event.text);
}

}  // namespace trainwatch::incident
