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

TEST(PeerTrust, RootsWordIsTakenOnlyForAJobThatRunsHereAsRoot) {
  // Root would speak for every user's processes: a record anyone can write to the shared
  // directory must not make a node take them for a job it does not run.
  const std::string elsewhere = UntrustedBecause(RecordOf(0), {{"jobB", {1000}}});
  EXPECT_NE(elsewhere.find("speaks as root"), std::string::npos) << elsewhere;
  EXPECT_EQ(UntrustedBecause(RecordOf(0), {{"jobA", {0}}}), "") << "a job of root's here";
  EXPECT_NE(UntrustedBecause(RecordOf(0), {{"jobA", {1000}}}), "") << "another user's job";
  // The operator says the job runs here (cluster.job_id), none of its processes seen yet.
  EXPECT_EQ(UntrustedBecause(RecordOf(0), {{"jobA", {}}}), "");
}

}  // namespace
}  // namespace trainwatch::cluster
