#include "collect/artifact.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

namespace trainwatch::collect {
namespace {

TEST(CollectorResultTest, FinishCountsBytesAndSetsTheStatus) {
  struct Case {
    std::size_t asked;
    std::size_t read;
    CollectorStatus status;
  };
  for (const Case& c : std::vector<Case>{{0, 0, CollectorStatus::kSkipped},
                                         {2, 0, CollectorStatus::kFailed},
                                         {2, 1, CollectorStatus::kOk},
                                         {2, 2, CollectorStatus::kOk}}) {
    CollectorResult result;
    AddText(result, "a.txt", "12345");
    AddRange(result, "b.log", "/var/log/b.log", 100, 40);  // its length, not its offset
    Finish(result, Stopwatch(), c.asked, c.read);
    EXPECT_EQ(result.status, c.status) << c.asked << " " << c.read;
    EXPECT_EQ(result.bytes, 45u);
  }
  CollectorResult nothing;
  Finish(nothing, Stopwatch(), 0, 0);
  EXPECT_EQ(nothing.detail, "nothing to collect");
  CollectorResult said;
  AddDetail(said, "no training processes");
  AddDetail(said, "second line");
  Finish(said, Stopwatch(), 0, 0);
  EXPECT_EQ(said.detail, "no training processes\nsecond line") << "a reason given is kept";
}

}  // namespace
}  // namespace trainwatch::collect
