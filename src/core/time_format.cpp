#include "core/time_format.h"

#include <cstdio>
#include <ctime>

namespace trainwatch {

std::string FormatUtc(std::chrono::system_clock::time_point time, TimeFormat format) {
  const auto millis =
      std::chrono::floor<std::chrono::milliseconds>(time).time_since_epoch().count();
  // Floor, not truncation: a time before the epoch still names the second it falls in.
  const std::time_t seconds =
      static_cast<std::time_t>(millis >= 0 ? millis / 1000 : (millis - 999) / 1000);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char text[64];
  switch (format) {
    case TimeFormat::kIsoSeconds:
      std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02dZ", utc.tm_year + 1900,
                    utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec);
      break;
    case TimeFormat::kIsoMillis:
      std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                    utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                    static_cast<int>(millis - static_cast<long long>(seconds) * 1000));
      break;
    case TimeFormat::kCompact:
      std::snprintf(text, sizeof text, "%04d%02d%02dT%02d%02d%02dZ", utc.tm_year + 1900,
                    utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec);
      break;
  }
  return text;
}

}  // namespace trainwatch
