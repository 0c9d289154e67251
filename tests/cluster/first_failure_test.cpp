// A job's first failure across its nodes: the earliest incident, unless one naming the rank
// that printed its own error opened within the clock skew allowed.
#include "cluster/first_failure.h"

#include <gtest/gtest.h>

namespace trainwatch::cluster {
namespace {

TEST(FirstFailure, TheEarliestUnlessARanksOwnErrorOpenedWithinTheSkew) {
  EXPECT_EQ(FirstFailureIndex({{1000, false}}), 0u);
  // node0 saw only its ranks' "Connection closed" 23 ms before node1's rank raised.
  EXPECT_EQ(FirstFailureIndex({{1000, false}, {1023, true}}), 1u);
  // Past the 5 s allowance the earlier one stands.
  EXPECT_EQ(FirstFailureIndex({{1000, false}, {6001, true}}), 0u);
  EXPECT_EQ(FirstFailureIndex({{1000, false}, {6000, true}}), 1u);
  // Both name a rank: the earliest.
  EXPECT_EQ(FirstFailureIndex({{1000, true}, {1500, true}}), 0u);
}

}  // namespace
}  // namespace trainwatch::cluster
