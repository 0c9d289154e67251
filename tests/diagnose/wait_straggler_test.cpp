// The straggler by its waits: shares as measured on real gloo ranks (world 3, each step a
// 20 ms sleep, then all_reduce; the last rank slowed), sampled at 50 Hz for 2 s.
#include "diagnose/wait_straggler.h"

#include <gtest/gtest.h>

#include "diagnose/suspects.h"

namespace trainwatch::diagnose {
namespace {

RankState Sampled(int rank, std::map<std::string, int> waits) {
  RankState state;
  state.label = "rank " + std::to_string(rank);
  state.rank = rank;
  state.pid = 100 + rank;
  state.waits = std::move(waits);
  return state;
}

// Waits in the collective 63% of the time, sleeps in its own step 33%.
RankState Peer(int rank) {
  return Sampled(rank, {{"futex_do_wait", 63}, {"hrtimer_nanosleep", 33}, {"running", 4}});
}

TEST(StragglerByWaits, ARankThatComputesWhileItsPeersWaitIsNamed) {
  const std::vector<RankState> ranks = {
      Peer(0), Peer(1),
      Sampled(2, {{"running", 52}, {"hrtimer_nanosleep", 35}, {"futex_do_wait", 11}})};
  const std::optional<WaitStraggler> straggler = StragglerByWaits(ranks);
  ASSERT_TRUE(straggler);
  EXPECT_EQ(straggler->index, 2U);
  EXPECT_EQ(straggler->reason,
            "waits for its peers least (futex_do_wait in 11% of 98 samples; its peers 63%), "
            "mostly running (53%)");
}

TEST(StragglerByWaits, ARankSleepingInItsDataLoaderIsNamedWhateverItsCpu) {
  const std::vector<RankState> ranks = {
      Peer(0), Sampled(1, {{"hrtimer_nanosleep", 82}, {"futex_do_wait", 12}, {"running", 4}}),
      Peer(2)};
  const std::optional<WaitStraggler> straggler = StragglerByWaits(ranks);
  ASSERT_TRUE(straggler);
  EXPECT_EQ(straggler->index, 1U);
  EXPECT_NE(straggler->reason.find("mostly hrtimer_nanosleep (84%)"), std::string::npos)
      << straggler->reason;
}

TEST(StragglerByWaits, ARankOnlyAThirdSlowerIsNamedToo) {
  // 1.3x: its peers wait about 23% of each step, it almost never (150 samples, 50 a second).
  const RankState peer =
      Sampled(0, {{"futex_do_wait", 34}, {"hrtimer_nanosleep", 110}, {"running", 6}});
  const std::vector<RankState> ranks = {
      peer, Sampled(1, peer.waits),
      Sampled(2, {{"futex_do_wait", 4}, {"hrtimer_nanosleep", 100}, {"running", 46}})};
  const std::optional<WaitStraggler> straggler = StragglerByWaits(ranks);
  ASSERT_TRUE(straggler);
  EXPECT_EQ(straggler->index, 2U);
}

TEST(StragglerByWaits, TwoRanksTellTooTheRankThatWaitsForThePeer) {
  const std::vector<RankState> ranks = {
      Sampled(0, {{"hrtimer_nanosleep", 82}, {"futex_do_wait", 12}}), Peer(1)};
  const std::optional<WaitStraggler> straggler = StragglerByWaits(ranks);
  ASSERT_TRUE(straggler);
  EXPECT_EQ(straggler->index, 0U);
  EXPECT_NE(straggler->reason.find("its peer 63%"), std::string::npos) << straggler->reason;
}

TEST(StragglerByWaits, NoOneIsNamedWhenTheRanksWaitAlikeOrTooLittleIsKnown) {
  EXPECT_FALSE(StragglerByWaits({Peer(0), Peer(1), Peer(2)}));
  // Two slow ranks of four: neither stands apart from every peer.
  const RankState slow = Sampled(2, {{"running", 80}, {"futex_do_wait", 10}});
  EXPECT_FALSE(StragglerByWaits({Peer(0), Peer(1), slow, Sampled(3, slow.waits)}));
  // Peers that barely wait: no wait to tell a straggler by.
  EXPECT_FALSE(StragglerByWaits({Sampled(0, {{"running", 90}, {"futex_do_wait", 10}}),
                                 Sampled(1, {{"running", 99}, {"futex_do_wait", 1}})}));
  // Too few samples (a crash's 300 ms window), one rank sampled, a rank gone.
  EXPECT_FALSE(StragglerByWaits(
      {Sampled(0, {{"futex_do_wait", 6}}), Sampled(1, {{"running", 6}}), Peer(2)}));
  RankState gone = Sampled(1, {{"running", 90}});
  gone.alive = false;
  EXPECT_FALSE(StragglerByWaits({Peer(0), gone}));
}

TEST(StragglerByWaits, TheStragglerIsASuspectOfTheDiagnosis) {
  const RankDiagnosis diagnosis =
      Diagnose({Peer(0), Peer(1),
                Sampled(2, {{"running", 52}, {"hrtimer_nanosleep", 35}, {"futex_do_wait", 11}})});
  ASSERT_EQ(diagnosis.suspects.size(), 1U);
  EXPECT_EQ(diagnosis.suspects[0].label, "rank 2");
  EXPECT_EQ(diagnosis.suspects[0].reason.rfind("waits for its peers least", 0), 0U);
}

TEST(SlowNodeByWaits, TheNodeWhoseRanksWaitLeastIsNamedWithTheShares) {
  const std::optional<NodeWaits> node0 = SumWaits(
      {{{"futex_do_wait", 40}, {"running", 110}}, {{"futex_do_wait", 41}, {"running", 109}}});
  ASSERT_TRUE(node0);
  EXPECT_EQ(node0->samples, 300);
  EXPECT_EQ(node0->peer_waits, 81);
  EXPECT_EQ(node0->ranks, 2);
  const std::optional<NodeWaits> node1 =
      SumWaits({{{"futex_do_wait", 4}, {"running", 146}}, {{"running", 150}}, {{"running", 3}}});
  ASSERT_TRUE(node1);
  EXPECT_EQ(node1->ranks, 2) << "a rank with too few samples is left out";
  const std::optional<SlowNode> slow =
      SlowNodeByWaits({*node0, *node1, NodeWaits{300, 90, 2}}, {"node0", "node1", "node2"});
  ASSERT_TRUE(slow);
  EXPECT_EQ(slow->index, 1U);
  EXPECT_EQ(slow->reason,
            "its ranks wait for their peers least (1% of 300 samples over 2 ranks; node0, "
            "node2's 27%-30%)");
  // Nodes that barely wait, or wait alike, name none; nor does one node alone.
  EXPECT_FALSE(SlowNodeByWaits({NodeWaits{300, 30, 2}, NodeWaits{300, 3, 2}}, {"a", "b"}));
  EXPECT_FALSE(SlowNodeByWaits({NodeWaits{300, 80, 2}, NodeWaits{300, 60, 2}}, {"a", "b"}));
  EXPECT_FALSE(SlowNodeByWaits({*node1}, {"node1"}));
  EXPECT_FALSE(SumWaits({{{"running", 5}}}));
}

TEST(IsPeerWait, FutexesSocketsAndEpollsAreWaitsForPeers) {
  EXPECT_TRUE(IsPeerWait("futex_do_wait"));
  EXPECT_TRUE(IsPeerWait("futex_wait_queue_me"));
  EXPECT_TRUE(IsPeerWait("sk_wait_data"));
  EXPECT_TRUE(IsPeerWait("do_epoll_wait"));
  EXPECT_FALSE(IsPeerWait("hrtimer_nanosleep"));
  EXPECT_FALSE(IsPeerWait("running"));
}

}  // namespace
}  // namespace trainwatch::diagnose
