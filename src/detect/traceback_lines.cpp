#include "detect/traceback_lines.h"

#include <algorithm>
#include <cctype>

#include "core/text_trim.h"

namespace trainwatch::detect {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Where a prefix's time of day sits ("2024-02-21T05:55:25.318312Z", "E321 02:07:08.408"):
// the digits there tick from line to line. Empty when the prefix has none. Rank ids and host
// names ("[rank3]: ", "gpu250: ") lie outside it and must match exactly.
struct Span {
  std::size_t begin = 0;
  std::size_t end = 0;
  bool empty() const { return begin == end; }
};

Span ClockSpan(std::string_view prefix) {
  for (std::size_t i = 0; i + 5 <= prefix.size(); ++i) {
    if (IsDigit(prefix[i]) && IsDigit(prefix[i + 1]) && prefix[i + 2] == ':' &&
        IsDigit(prefix[i + 3]) && IsDigit(prefix[i + 4])) {
      constexpr std::string_view kDateChars = "0123456789-/:.,T ";
      constexpr std::string_view kTimeChars = "0123456789:.,Z";
      std::size_t begin = i;
      while (begin > 0 && kDateChars.find(prefix[begin - 1]) != std::string_view::npos) {
        --begin;
      }
      while (begin < i && prefix[begin] == ' ') {
        ++begin;
      }
      std::size_t end = i;
      while (end < prefix.size() && kTimeChars.find(prefix[end]) != std::string_view::npos) {
        ++end;
      }
      return {begin, end};
    }
  }
  return {};
}

bool EndsWithExceptionWord(std::string_view name) {
  for (std::string_view suffix : {"Error", "Exception", "Interrupt", "Exit", "Warning", "Iteration",
                                  "Failure", "Fault", "Timeout", "Empty"}) {
    if (name.ends_with(suffix)) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool HasClock(std::string_view prefix) { return !ClockSpan(prefix).empty(); }

std::optional<std::size_t> ClockPrefixLength(std::string_view prefix, std::string_view text) {
  const Span clock = ClockSpan(prefix);
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < prefix.size()) {
    const bool ticking = i >= clock.begin && i < clock.end;
    if (ticking && IsDigit(prefix[i])) {
      if (j >= text.size() || !IsDigit(text[j])) {
        return std::nullopt;
      }
      while (i < prefix.size() && IsDigit(prefix[i])) {
        ++i;
      }
      while (j < text.size() && IsDigit(text[j])) {
        ++j;
      }
    } else if (j < text.size() && prefix[i] == text[j]) {
      ++i;
      ++j;
    } else {
      return std::nullopt;
    }
  }
  return j;
}

std::string_view WriterTag(std::string_view prefix) {
  std::size_t colon = std::string_view::npos;
  for (std::string_view end : {": ", "]:", ">:"}) {
    const std::size_t at = prefix.find(end);
    if (at != std::string_view::npos) {
      const std::size_t tag_end = end == ": " ? at + 1 : at + 2;
      colon = std::min(colon, tag_end);
    }
  }
  if (colon == std::string_view::npos) {
    return {};
  }
  const std::string_view tag = prefix.substr(0, colon);
  return tag.find_first_of("%|") == std::string_view::npos ? tag : std::string_view();
}

bool IsExceptionLine(std::string_view body) {
  std::size_t i = 0;
  std::size_t last_part = 0;
  bool dotted = false;
  bool lower_seen = false;
  while (true) {
    if (i >= body.size() ||
        !(std::isalpha(static_cast<unsigned char>(body[i])) || body[i] == '_')) {
      return false;
    }
    last_part = i;
    while (i < body.size() &&
           (std::isalnum(static_cast<unsigned char>(body[i])) || body[i] == '_')) {
      lower_seen = lower_seen || std::islower(static_cast<unsigned char>(body[i]));
      ++i;
    }
    if (i + 1 < body.size() && body[i] == '.') {
      dotted = true;
      ++i;
      continue;
    }
    break;
  }
  if (!lower_seen) {
    return false;
  }
  const std::string_view name = body.substr(last_part, i - last_part);
  if (i == body.size()) {
    return EndsWithExceptionWord(name);
  }
  if (body[i] != ':' || (i + 1 < body.size() && body[i + 1] != ' ')) {
    return false;
  }
  const auto capitals = std::count_if(
      name.begin(), name.end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)); });
  return dotted || capitals >= 2 || EndsWithExceptionWord(name);
}

bool HasSurvivedMarker(std::string_view line) {
  line = TrimRight(line, kWhiteSpace);
  for (std::string_view marker :
       {"Exception ignored in", "Exception in thread ",
        "Unhandled exception in thread started by",                     // Python 2
        "Error in atexit._run_exitfuncs:", "--- Logging error ---"}) {  // logging's handleError()
    if (line.find(marker) != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

bool IsFrameLine(std::string_view text) {
  const std::size_t start = text.find_first_not_of(" \t");
  return start != std::string_view::npos && start > 0 && text.substr(start).starts_with("File \"");
}

bool IsExceptionAt(std::string_view rest) {
  const std::size_t name_end =
      rest.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.");
  return name_end != 0 && (name_end == std::string_view::npos || rest[name_end] == ':' ||
                           TrimRight(rest, kWhiteSpace).size() == name_end);
}

bool IsWriterPrefix(std::string_view prefix) {
  if (prefix.empty()) {
    return true;
  }
  const std::string_view tag = WriterTag(prefix);
  return !tag.empty() && TrimLeft(prefix.substr(tag.size()), " \t").empty();
}

}  // namespace trainwatch::detect
