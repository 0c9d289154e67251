// PrefilterForm: the rules that decide whether the byte-oriented Hyperscan prefilter may
// stand in front of an RE2 pattern, and in which spelling. Pure function; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace trainwatch {

// The pattern as Hyperscan must see it to propose at least every text RE2 (Latin-1 mode,
// core/regex_options.h) matches, or nullopt, with the reason in `why`, when no such form is
// known and RE2 alone must judge. `segmented`: each scanned text is many '\n'-separated
// segments that RE2 judges one at a time, so \A and \z (a segment's start and end) become
// ^ and $, which Hyperscan then takes in multiline mode.
// Patterns Hyperscan's compiler refuses are not caught here: MultiRegex::Build learns of them
// from the compiler.
std::optional<std::string> PrefilterForm(std::string_view regex, bool segmented, std::string* why);

}  // namespace trainwatch
