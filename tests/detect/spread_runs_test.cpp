// The job's own straggler reports: runs of uneven reports per writer, told once per run, with
// the slow rank; and whether the reports still hold the job slow.
#include "detect/spread_runs.h"

#include <gtest/gtest.h>

#include <string>

#include "core/regex_options.h"

namespace trainwatch::detect {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

class SpreadRunsTest : public ::testing::Test {
 protected:
  SpreadRunsTest() : regex_(kPattern, RegexOptions()) {
    spread_.above = 1.2;
    spread_.for_reports = 3;
  }
  std::optional<SpreadRuns::Said> Report(const std::string& writer, double low, double high,
                                         int slow_rank) {
    now_ += minutes(1);
    const std::string line = writer + "[2025-06-02 10:11:00] | MnRtt/Rnk: " + std::to_string(low) +
                             "ms/1 | MxRtt/Rnk: " + std::to_string(high) + "ms/" +
                             std::to_string(slow_rank) + " | MnPwr/Rnk: 5W/0";
    return runs_.OnLine(0, spread_, regex_, line, now_);
  }
  static constexpr const char* kPattern =
      R"(MnRtt/Rnk: (?P<low>[0-9]+(?:\.[0-9]+)?)ms/[0-9]+ \| MxRtt/Rnk: (?P<high>[0-9]+(?:\.[0-9]+)?)ms/(?P<rank>[0-9]+))";
  RE2 regex_;
  rules::SpreadDetector spread_;
  SpreadRuns runs_;
  SpreadRuns::TimePoint now_{};
};

TEST_F(SpreadRunsTest, ThreeUnevenReportsInARowNameTheSlowRankOnce) {
  EXPECT_FALSE(Report("", 2000, 2020, 0));  // even
  EXPECT_FALSE(runs_.SaysSlow(now_));
  EXPECT_EQ(runs_.last_even_report(), now_);
  EXPECT_FALSE(Report("", 2000, 2700, 5));
  EXPECT_TRUE(runs_.SaysSlow(now_)) << "uneven now, though not told yet";
  EXPECT_FALSE(Report("", 2000, 2710, 5));
  const std::optional<SpreadRuns::Said> said = Report("", 2000, 2650, 5);
  ASSERT_TRUE(said);
  EXPECT_EQ(said->rank, 5);
  EXPECT_EQ(said->summary,
            "rank 5 is the slowest at 1.32x the fastest (2650 against 2000), 3 reports in a row");
  EXPECT_FALSE(Report("", 2000, 2700, 5)) << "once per run";
  EXPECT_TRUE(runs_.SaysSlow(now_));
  EXPECT_FALSE(runs_.SaysSlow(now_ + std::chrono::minutes(11)))
      << "a writer that stopped reporting";
  // Even again: the job is no longer slow by its reports, and the next run is told anew.
  EXPECT_FALSE(Report("", 2000, 2010, 2));
  EXPECT_FALSE(runs_.SaysSlow(now_));
  EXPECT_FALSE(Report("", 2000, 2700, 6));
  EXPECT_FALSE(Report("", 2000, 2700, 6));
  ASSERT_TRUE(Report("", 2000, 2700, 6));
}

TEST_F(SpreadRunsTest, EachWriterCountsItsOwnReports) {
  spread_.for_reports = 2;
  EXPECT_FALSE(Report("[rank0]:", 1000, 1500, 3));
  EXPECT_FALSE(Report("[rank8]:", 1000, 1010, 3));  // another writer's even report
  const std::optional<SpreadRuns::Said> said = Report("[rank0]:", 1000, 1500, 3);
  ASSERT_TRUE(said);
  EXPECT_EQ(said->summary,
            "[rank0]: rank 3 is the slowest at 1.50x the fastest (1500 against 1000), 2 reports "
            "in a row");
}

TEST_F(SpreadRunsTest, AReportWithoutAFastestTimeAboveZeroIsNoReport) {
  spread_.for_reports = 1;
  EXPECT_FALSE(Report("", 0, 1500, 3));
  EXPECT_EQ(runs_.last_even_report(), SpreadRuns::TimePoint{});
  EXPECT_FALSE(runs_.SaysSlow(now_));
}

TEST_F(SpreadRunsTest, WithoutARankGroupARankIsTheSlowest) {
  const RE2 bare(R"(min (?P<low>[0-9.]+) max (?P<high>[0-9.]+))", RegexOptions());
  spread_.for_reports = 1;
  const std::optional<SpreadRuns::Said> said =
      runs_.OnLine(0, spread_, bare, "step time min 1.5 max 3", now_);
  ASSERT_TRUE(said);
  EXPECT_FALSE(said->rank);
  EXPECT_EQ(said->summary, "a rank is the slowest at 2.00x the fastest (3 against 1.5)");
}

TEST_F(SpreadRunsTest, AWarningHoldsTheJobSlowForTenMinutes) {
  EXPECT_FALSE(runs_.SaysSlow(now_));
  now_ += minutes(1);
  runs_.OnWarning(now_);
  EXPECT_EQ(runs_.last_even_report(), SpreadRuns::TimePoint{}) << "a warning says nothing even";
  EXPECT_TRUE(runs_.SaysSlow(now_ + minutes(9)));
  EXPECT_FALSE(runs_.SaysSlow(now_ + minutes(10) + seconds(1)));
}

}  // namespace
}  // namespace trainwatch::detect
