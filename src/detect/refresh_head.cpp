#include "detect/refresh_head.h"

#include "core/text_trim.h"
#include "detect/progress_parser.h"

namespace trainwatch::detect {
namespace {

// Named for this file alone: a unity build puts it beside progress_parser.cpp's helpers.
bool IsHeadDigit(char c) { return c >= '0' && c <= '9'; }

// Whether two texts are alike but for the numbers in them: digit runs match any digit run.
bool AlikeButForNumbers(std::string_view a, std::string_view b) {
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() && j < b.size()) {
    if (IsHeadDigit(a[i]) && IsHeadDigit(b[j])) {
      while (i < a.size() && IsHeadDigit(a[i])) {
        ++i;
      }
      while (j < b.size() && IsHeadDigit(b[j])) {
        ++j;
      }
    } else if (a[i++] != b[j++]) {
      return false;
    }
  }
  return i == a.size() && j == b.size();
}

}  // namespace

std::optional<RefreshHead> HeadOfRefresh(std::string_view segment) {
  const std::size_t bar = segment.find("%|");
  if (bar == std::string_view::npos || !TrimRight(segment, " \t").ends_with(']') ||
      segment.find('\x1b') != std::string_view::npos ||
      segment.find('\b') != std::string_view::npos) {
    return std::nullopt;
  }
  std::size_t digits = bar;
  while (digits > 0 && IsHeadDigit(segment[digits - 1])) {
    --digits;
  }
  if (digits == bar || bar - digits > 3) {
    return std::nullopt;
  }
  int percent = 0;
  for (std::size_t i = digits; i < bar; ++i) {
    percent = percent * 10 + (segment[i] - '0');
  }
  // As TqdmUpdate splits what stands before the percentage.
  const std::string_view before = Trim(TrimRight(segment.substr(0, digits), " \t:"), " \t");
  const std::size_t prefix = WriterPrefixLength(before);
  return RefreshHead{before.substr(0, prefix), before.substr(prefix), percent};
}

bool SameBar(const RefreshHead& a, const RefreshHead& b) {
  return a.prefix == b.prefix && AlikeButForNumbers(a.desc, b.desc);
}

bool Supersedes(const RefreshHead& later, const RefreshHead& earlier) {
  return later.percent >= earlier.percent && SameBar(later, earlier);
}

}  // namespace trainwatch::detect
