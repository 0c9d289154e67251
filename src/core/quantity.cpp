#include "core/quantity.h"

#include <array>
#include <charconv>
#include <cstdio>
#include <iterator>
#include <limits>
#include <string>

namespace trainwatch {
namespace {

struct Unit {
  std::string_view suffix;
  std::uint64_t factor;
};

// Splits "123abc" into 123 and "abc"; fails on a missing or overlong number.
Result<std::pair<std::uint64_t, std::string_view>> SplitNumber(std::string_view text,
                                                               std::string_view what) {
  std::uint64_t number = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, number);
  if (ec == std::errc::result_out_of_range) {
    return Error{std::string(what) + " '" + std::string(text) + "' is too large"};
  }
  if (ec != std::errc() || ptr == begin) {
    return Error{std::string(what) + " '" + std::string(text) + "' must start with a number"};
  }
  return std::pair{number, std::string_view(ptr, static_cast<size_t>(end - ptr))};
}

Result<std::uint64_t> Scale(std::string_view text, std::string_view what, std::uint64_t number,
                            std::string_view suffix, const auto& units, std::string_view expected) {
  for (const Unit& unit : units) {
    if (suffix == unit.suffix) {
      if (number > std::numeric_limits<std::uint64_t>::max() / unit.factor) {
        return Error{std::string(what) + " '" + std::string(text) + "' is too large"};
      }
      return number * unit.factor;
    }
  }
  return Error{std::string(what) + " '" + std::string(text) +
               "' needs a unit: " + std::string(expected)};
}

}  // namespace

Result<Duration> ParseDuration(std::string_view text) {
  static constexpr std::array<Unit, 5> kUnits{{{"ms", 1},
                                               {"s", 1000},
                                               {"m", 60 * 1000},
                                               {"h", 60 * 60 * 1000},
                                               {"d", 24 * 60 * 60 * 1000}}};
  auto split = SplitNumber(text, "duration");
  if (!split) {
    return split.error();
  }
  auto millis = Scale(text, "duration", split->first, split->second, kUnits,
                      "ms, s, m, h or d (e.g. 30s, 10m)");
  if (!millis) {
    return millis.error();
  }
  if (*millis > static_cast<std::uint64_t>(std::numeric_limits<Duration::rep>::max())) {
    return Error{"duration '" + std::string(text) + "' is too large"};
  }
  return Duration(static_cast<Duration::rep>(*millis));
}

Result<std::uint64_t> ParseByteSize(std::string_view text) {
  static constexpr std::array<Unit, 8> kUnits{{{"", 1},
                                               {"B", 1},
                                               {"KiB", 1ull << 10},
                                               {"MiB", 1ull << 20},
                                               {"GiB", 1ull << 30},
                                               {"KB", 1000},
                                               {"MB", 1000 * 1000},
                                               {"GB", 1000 * 1000 * 1000}}};
  auto split = SplitNumber(text, "size");
  if (!split) {
    return split.error();
  }
  return Scale(text, "size", split->first, split->second, kUnits,
               "B, KiB, MiB, GiB, KB, MB or GB (e.g. 64KiB)");
}

std::string FormatByteSize(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  if (unit == 0) {
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  }
  return text;
}

std::string FormatDuration(Duration duration) {
  const long long ms = duration.count();
  if (ms == 0) {
    return "0s";
  }
  for (const auto& [unit, size] : {std::pair<const char*, long long>{"h", 3600000},
                                   std::pair<const char*, long long>{"m", 60000},
                                   std::pair<const char*, long long>{"s", 1000}}) {
    if (ms % size == 0) {
      return std::to_string(ms / size) + unit;
    }
  }
  return std::to_string(ms) + "ms";
}

}  // namespace trainwatch
