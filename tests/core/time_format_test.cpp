#include "core/time_format.h"

#include <gtest/gtest.h>

namespace trainwatch {
namespace {

using std::chrono::milliseconds;
using std::chrono::system_clock;

TEST(FormatUtc, EachFormat) {
  // 2024-05-01T12:34:56.789Z
  const system_clock::time_point at{milliseconds(1714566896789)};
  EXPECT_EQ(FormatUtc(at, TimeFormat::kIsoSeconds), "2024-05-01T12:34:56Z");
  EXPECT_EQ(FormatUtc(at, TimeFormat::kIsoMillis), "2024-05-01T12:34:56.789Z");
  EXPECT_EQ(FormatUtc(at), "2024-05-01T12:34:56.789Z");
  EXPECT_EQ(FormatUtc(at, TimeFormat::kCompact), "20240501T123456Z");
}

TEST(FormatUtc, MillisecondsArePaddedAndNeverRounded) {
  EXPECT_EQ(FormatUtc(system_clock::time_point{milliseconds(1714566896007)}),
            "2024-05-01T12:34:56.007Z");
  EXPECT_EQ(FormatUtc(system_clock::time_point{std::chrono::microseconds(1714566896999999)}),
            "2024-05-01T12:34:56.999Z");
}

TEST(FormatUtc, BeforeTheEpochFloorsToItsSecond) {
  EXPECT_EQ(FormatUtc(system_clock::time_point{milliseconds(-1)}), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(FormatUtc(system_clock::time_point{}, TimeFormat::kIsoSeconds), "1970-01-01T00:00:00Z");
}

}  // namespace
}  // namespace trainwatch
