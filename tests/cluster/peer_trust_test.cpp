// Who may speak for a job across nodes (security round 3, item 6).
#include "cluster/peer_trust.h"

#include <gtest/gtest.h>

namespace trainwatch::cluster {
namespace {

PeerRecord RecordOf(std::optional<int> uid) {
  PeerRecord record;
  record.job_id = "jobA";
  record.node = "gpu-1";
  record.uid = uid;
  return record;
}

TEST(PeerTrust, ARecordOfTheJobsOwnUserIsActedOn) {
  EXPECT_EQ(UntrustedBecause(RecordOf(1000), {{"jobA", {1000}}}), "");
  // No process of the job here: nobody's ranks to pause, its user's state taken.
  EXPECT_EQ(UntrustedBecause(RecordOf(1000), {{"jobB", {2000}}}), "");
}

TEST(PeerTrust, AnotherUsersClaimOrNoUidIsNot) {
  const std::string claim = UntrustedBecause(RecordOf(4242), {{"jobA", {1000}}});
  EXPECT_NE(claim.find("another user's claim"), std::string::npos) << claim;
  EXPECT_NE(claim.find("uid 4242 on gpu-1"), std::string::npos) << claim;
  const std::string none = UntrustedBecause(RecordOf(std::nullopt), {{"jobA", {1000}}});
  EXPECT_NE(none.find("names no uid"), std::string::npos) << none;
}

}  // namespace
}  // namespace trainwatch::cluster
