// Runs of not-finite loss per writer, with healthy lines read only when needed: what a run's
// summary and `status` say must be what reading every line would have said.
#include "detect/loss_runs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace trainwatch::detect {
namespace {

class LossRunsTest : public ::testing::Test {
 protected:
  std::optional<std::string> Line(const std::string& text) {
    return runs_.OnLine(0, metric_, text, 0, ++line_);
  }
  rules::MetricDetector metric_;  // loss, 3 in a row
  LossRuns runs_;
  std::uint64_t line_ = 0;
};

TEST_F(LossRunsTest, ARunSaysTheLastFiniteLossAHealthyLineLeftUnread) {
  EXPECT_FALSE(Line("2026-11-28 10:00:00 INFO step 3 loss=2.31 lr=1e-4"));
  // Not a reading: it must not stand in for the last finite loss.
  EXPECT_FALSE(Line("[deepspeed] OVERFLOW! Attempted loss scale: 65536, reducing to 32768"));
  EXPECT_FALSE(Line("step 4 loss=nan"));
  EXPECT_FALSE(Line("step 5 loss=nan"));
  const std::optional<std::string> said = Line("step 6 loss=nan");
  ASSERT_TRUE(said);
  EXPECT_EQ(*said,
            "loss is nan on 3 lines in a row since step 4 (line 3); the last finite loss was "
            "2.31 at step 3");
  EXPECT_FALSE(Line("step 7 loss=nan")) << "once per run";
}

TEST_F(LossRunsTest, AFiniteLossBetweenNotFiniteOnesStartsTheCountAgain) {
  EXPECT_FALSE(Line("step 1 loss=nan"));
  EXPECT_FALSE(Line("step 2 loss=inf"));
  EXPECT_FALSE(Line("step 3 loss=1.5"));
  EXPECT_FALSE(Line("step 4 loss=nan"));
  EXPECT_FALSE(Line("step 5 loss=nan"));
  const std::optional<std::string> said = Line("step 6 loss=nan");
  ASSERT_TRUE(said);
  EXPECT_NE(said->find("since step 4"), std::string::npos) << *said;
  EXPECT_NE(said->find("the last finite loss was 1.5 at step 3"), std::string::npos) << *said;
}

TEST_F(LossRunsTest, AnotherWritersFiniteLossIsNotThisWritersLast) {
  EXPECT_FALSE(Line("[rank0]: step 3 loss=2.31"));
  EXPECT_FALSE(Line("[rank1]: step 3 loss=nan"));
  EXPECT_FALSE(Line("[rank1]: step 4 loss=nan"));
  const std::optional<std::string> said = Line("[rank1]: step 5 loss=nan");
  ASSERT_TRUE(said);
  EXPECT_EQ(*said, "[rank1]: loss is nan on 3 lines in a row since step 3 (line 2)");
}

TEST_F(LossRunsTest, AWritersLastFinitePushedOutByOthersIsNotToldStale) {
  EXPECT_FALSE(Line("[rank1]: step 1 loss=9.0"));  // kept unread, then pushed out
  for (int i = 0; i < 40; ++i) {
    EXPECT_FALSE(Line("[rank0]: step " + std::to_string(i) + " loss=2.0"));
  }
  EXPECT_FALSE(Line("[rank1]: step 41 loss=nan"));
  EXPECT_FALSE(Line("[rank1]: step 42 loss=nan"));
  const std::optional<std::string> said = Line("[rank1]: step 43 loss=nan");
  ASSERT_TRUE(said);
  EXPECT_EQ(said->find("the last finite"), std::string::npos) << *said;
}

TEST_F(LossRunsTest, TheLastLossIsTheNewestLineReadOrKept) {
  EXPECT_FALSE(runs_.last_loss());
  Line("[rank0]: step 7 loss=0.5");
  std::optional<LossRuns::LastLoss> last = runs_.last_loss();
  ASSERT_TRUE(last);
  EXPECT_DOUBLE_EQ(last->value, 0.5);
  EXPECT_EQ(last->step, 7);
  EXPECT_EQ(last->writer, "[rank0]:");
  Line("[rank0]: step 8 loss=nan");
  last = runs_.last_loss();
  ASSERT_TRUE(last);
  EXPECT_TRUE(std::isnan(last->value));
  EXPECT_EQ(last->not_finite_in_a_row, 1u);
  Line("[rank0]: step 9 loss=0.25");    // read in full: a run was under way
  Line("[rank0]: step 10 loss=0.125");  // kept unread: none is
  last = runs_.last_loss();
  ASSERT_TRUE(last);
  EXPECT_DOUBLE_EQ(last->value, 0.125);
  EXPECT_EQ(last->step, 10);
  EXPECT_EQ(last->not_finite_in_a_row, 0u);
}

}  // namespace
}  // namespace trainwatch::detect
