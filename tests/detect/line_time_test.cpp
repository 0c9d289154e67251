// When a log line says it was written: the times loggers put at a line's start, and what only
// looks like one.
#include "detect/line_time.h"

#include <gtest/gtest.h>

#include "core/time_format.h"

namespace trainwatch::detect {
namespace {

std::string Read(std::string_view line, int glog_year = 2024) {
  const auto time = LineTime(line, glog_year);
  return time ? FormatUtc(*time) : "none";
}

TEST(LineTime, ReadsIsoAndPythonLoggingTimes) {
  EXPECT_EQ(Read("2024-02-21T05:55:25.318312Z DEBUG torch: step 3"), "2024-02-21T05:55:25.318Z");
  EXPECT_EQ(Read("[2024-02-21 05:55:25,318] [INFO] [engine.py:12] loss 2.1"),
            "2024-02-21T05:55:25.318Z");
  EXPECT_EQ(Read("[rank3]: 2024-02-21 05:55:25 ERROR failed"), "2024-02-21T05:55:25.000Z");
  EXPECT_EQ(Read("gpu250: 2023-12-31T23:59:59 x"), "2023-12-31T23:59:59.000Z");
}

TEST(LineTime, ReadsGlogTimesInTheYearGiven) {
  EXPECT_EQ(Read("E0221 05:55:25.318312 1234 ProcessGroupNCCL.cpp:1338] Watchdog caught"),
            "2024-02-21T05:55:25.318Z");
  EXPECT_EQ(Read("[rank0]: W0101 00:00:01.000001 99 x.cc:1] y", 2026), "2026-01-01T00:00:01.000Z");
}

TEST(LineTime, WhatOnlyLooksLikeATimeIsNone) {
  EXPECT_EQ(Read("step 4/100 loss=2.3"), "none");
  EXPECT_EQ(Read("checkpoint 12024-01-01T00:00:00 saved"), "none");  // glued to digits
  EXPECT_EQ(Read("2024-13-01 00:00:00 month 13"), "none");
  EXPECT_EQ(Read("2024-02-30 00:00:00 no such day"), "none");
  EXPECT_EQ(Read("2024-02-21 25:00:00 no such hour"), "none");
  EXPECT_EQ(Read("ERROR0221 05:55:25.318312 not glog"), "none");
  // A time deep in a message is the message's, not the logger's.
  EXPECT_EQ(Read(std::string(kLineTimeWindow, 'x') + " 2024-02-21 05:55:25"), "none");
}

}  // namespace
}  // namespace trainwatch::detect
