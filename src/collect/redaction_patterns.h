// What the Redactor takes for a secret: the parts of secret-looking variable names and the
// built-in value patterns, as tables. Kept apart from the matching (redactor.cpp) so the list
// of what is covered reads in one place; docs/bundles.md lists the same.
#pragma once

#include <span>
#include <string_view>

namespace trainwatch::collect {

// A built-in value pattern. The regex (RE2) replaces the first capture group that took
// part in the match, so context the pattern needs (`Bearer `, `user:` in a URL, the
// BEGIN/END lines of a key) stays readable; without groups the whole match goes.
// `prefilter` is the form the prefilter pass scans for (empty: derived from the regex); it must
// match wherever the regex does.
struct BuiltinPattern {
  std::string_view name;
  std::string_view regex;
  std::string_view prefilter;
};

// In order: where patterns overlap, the first to match gets the value and the count.
std::span<const BuiltinPattern> BuiltinPatterns();

// Secret-looking names, matched as case-insensitive substrings of an upper-cased name.
std::span<const std::string_view> SecretNameParts();
// Names ending in these are secret too.
std::span<const std::string_view> SecretNameSuffixes();

}  // namespace trainwatch::collect
