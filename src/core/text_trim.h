// Trimming a view of text by a set of bytes the caller names: tqdm's fields pad with spaces
// and tabs, a traceback's line may end in "\r\n", a CSV cell in any white space. Each caller
// says which, so nothing here depends on the locale (log lines are bytes). Pure; any thread.
#pragma once

#include <string_view>

namespace trainwatch {

// The bytes std::isspace takes in the "C" locale (the daemon never sets another).
inline constexpr std::string_view kWhiteSpace = " \t\n\v\f\r";

// `text` without the leading bytes that are in `chars`. Still a view into `text`, even when
// nothing is left (then at its end).
inline std::string_view TrimLeft(std::string_view text, std::string_view chars) {
  const std::size_t begin = text.find_first_not_of(chars);
  return text.substr(begin == std::string_view::npos ? text.size() : begin);
}

// `text` without the trailing bytes that are in `chars`. Still a view into `text`, even when
// nothing is left (then at its start).
inline std::string_view TrimRight(std::string_view text, std::string_view chars) {
  const std::size_t end = text.find_last_not_of(chars);
  return text.substr(0, end == std::string_view::npos ? 0 : end + 1);
}

// `text` without the bytes in `chars` at either end.
inline std::string_view Trim(std::string_view text, std::string_view chars) {
  return TrimRight(TrimLeft(text, chars), chars);
}

}  // namespace trainwatch
