#include "detect/line_time.h"

#include <re2/re2.h>

#include <string>

namespace trainwatch::detect {
namespace {

using std::chrono::system_clock;

// A civil date and time as UTC; nullopt for one that does not exist (a month 13, Feb 30).
std::optional<system_clock::time_point> Civil(int year, int month, int day, int hour, int minute,
                                              int second, std::string_view fraction) {
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  const std::chrono::year_month_day date{std::chrono::year(year),
                                         std::chrono::month(static_cast<unsigned>(month)),
                                         std::chrono::day(static_cast<unsigned>(day))};
  if (!date.ok()) {
    return std::nullopt;
  }
  std::chrono::microseconds micros{0};
  std::int64_t scale = 100000;
  for (std::size_t i = 0; i < fraction.size() && i < 6; ++i, scale /= 10) {
    micros += std::chrono::microseconds((fraction[i] - '0') * scale);
  }
  return system_clock::time_point(std::chrono::sys_days(date).time_since_epoch()) +
         std::chrono::hours(hour) + std::chrono::minutes(minute) + std::chrono::seconds(second) +
         micros;
}

}  // namespace

std::optional<system_clock::time_point> LineTime(std::string_view line, int glog_year) {
  // The date must not be glued to other digits: "step 12024-01-01" is no time.
  static const RE2 iso(
      R"((?:^|[^0-9])(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?)");
  // glog/absl: severity letter, MMDD, time with microseconds, at a line's start or after a
  // launcher's prefix ("[rank0]: I0221 ...").
  static const RE2 glog(R"((?:^|[\s:\]])[IWEF](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{6})\b)");
  const re2::StringPiece window(line.data(), std::min(line.size(), kLineTimeWindow));
  int year = 0;
  int month = 0;
  int day = 0;
  int hour = 0;
  int minute = 0;
  int second = 0;
  re2::StringPiece fraction;
  if (RE2::PartialMatch(window, iso, &year, &month, &day, &hour, &minute, &second, &fraction)) {
    return Civil(year, month, day, hour, minute, second,
                 std::string_view(fraction.data(), fraction.size()));
  }
  if (RE2::PartialMatch(window, glog, &month, &day, &hour, &minute, &second, &fraction)) {
    return Civil(glog_year, month, day, hour, minute, second,
                 std::string_view(fraction.data(), fraction.size()));
  }
  return std::nullopt;
}

}  // namespace trainwatch::detect
