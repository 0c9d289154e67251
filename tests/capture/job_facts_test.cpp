// AddJobFacts on a WatchedSource fed through a FakeEnv: the ranks' progress bars a capture
// hands to the suspects — named by their prefix in a shared log, or by the writers of a log
// file per rank.
#include "capture/job_facts.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "detect/watched_source_fixture.h"
#include "support/fake_env.h"

namespace trainwatch::capture {
namespace {

using std::chrono::milliseconds;

constexpr const char* kRules = R"(rules:
  - id: t.stall
    kind: hang
    tags: [train]
    description: stall
    progress: {stall_after: 60s}
)";

std::string Bar(std::string_view prefix, int count) {
  return std::string(prefix) + "Epoch 0:  10%|#         | " + std::to_string(count) +
         "/400 [00:03<00:05,  4.6it/s]\r";
}

class JobFactsTest : public ::testing::Test {
 protected:
  JobFactsTest() : source_(detect::TrainSource(kRules)) {
    env_.files().MakeDirs("/logs");
    source_->Start(env_, detect::QuietOutlet(), 5, {});
    env_.RunUntilIdle();
  }

  // The counts of request.progress by rank (prefix) or first writer pid (negated).
  std::map<int, std::int64_t> Progress() {
    CaptureRequest request;
    AddJobFacts({source_.get()}, request, env_.SteadyNow(), env_.WallNow());
    std::map<int, std::int64_t> counts;
    for (const diagnose::RankProgress& bar : request.progress) {
      counts[bar.rank ? *bar.rank : -bar.pids.front()] = bar.count;
    }
    return counts;
  }

  testing::FakeEnv env_;
  std::unique_ptr<detect::WatchedSource> source_;
};

TEST_F(JobFactsTest, PrefixedBarsInASharedLogAreEachTheirRanks) {
  env_.files().Append("/logs/job.log", Bar("[rank0]: ", 7) + Bar("[rank1]: ", 6) +
                                           Bar("[rank0]: ", 8) + Bar("[rank2]: ", 8));
  env_.Advance(milliseconds(20));
  EXPECT_EQ(Progress(), (std::map<int, std::int64_t>{{0, 8}, {1, 6}, {2, 8}}));
}

TEST_F(JobFactsTest, ALogFilePerRankIsTiedToItsWriters) {
  env_.files().Append("/logs/rank0.log", Bar("", 40));
  env_.files().Append("/logs/rank1.log", Bar("", 42));
  env_.files().Append("/logs/other.log", Bar("", 3));  // nobody known writes it
  env_.Advance(milliseconds(20));
  ASSERT_EQ(source_->file_streams().size(), 3u);
  for (auto& [id, stream] : source_->file_streams()) {
    const std::string path = source_->tails()->files().at(id)->tail.path();
    if (path == "/logs/rank0.log") {
      stream->set_writers({source::WriterProcess{4100, "python3"}});
    } else if (path == "/logs/rank1.log") {
      stream->set_writers({source::WriterProcess{4101, "python3"}});
    }
  }
  EXPECT_EQ(Progress(), (std::map<int, std::int64_t>{{-4101, 42}, {-4100, 40}}));
}

// Two jobs on the node, each its own log under the same globs: a slow incident of one is that
// job's (its firing's writers); a hang's capture still takes every writer it sees.
TEST_F(JobFactsTest, ASlowIncidentsRanksAreTheJobWritingItsStreamAlone) {
  env_.files().Append("/logs/a.log", Bar("", 40));
  env_.files().Append("/logs/b.log", Bar("", 42));
  env_.Advance(milliseconds(20));
  for (auto& [id, stream] : source_->file_streams()) {
    const std::string path = source_->tails()->files().at(id)->tail.path();
    stream->set_writers({source::WriterProcess{path == "/logs/a.log" ? 4100 : 4200, "python3"}});
  }
  detect::Firing slow;
  slow.event.kind = rules::RuleKind::kSlow;
  slow.writers = {source::WriterProcess{4100, "python3"}};
  CaptureRequest request;
  request.incident.kind = rules::RuleKind::kSlow;
  request.incident.firings = {slow};
  AddJobFacts({source_.get()}, request, env_.SteadyNow(), env_.WallNow());
  EXPECT_EQ(request.pids, std::vector<int>{4100});
  request = {};
  request.incident.kind = rules::RuleKind::kHang;
  request.incident.firings = {slow};
  AddJobFacts({source_.get()}, request, env_.SteadyNow(), env_.WallNow());
  EXPECT_EQ(request.pids, (std::vector<int>{4100, 4200}));
}

TEST_F(JobFactsTest, EachBarIsATimelineLaneWithItsAdvancesOnTheWallClock) {
  env_.files().Append("/logs/job.log", Bar("[rank3]: ", 7));
  env_.Advance(milliseconds(1000));
  const WallTime second = env_.WallNow();
  env_.files().Append("/logs/job.log", Bar("[rank3]: ", 8));
  env_.Advance(milliseconds(1000));
  const WallTime third = env_.WallNow();
  env_.files().Append("/logs/job.log", Bar("[rank3]: ", 9));
  env_.Advance(milliseconds(5000));
  CaptureRequest request;
  AddJobFacts({source_.get()}, request, env_.SteadyNow(), env_.WallNow());
  ASSERT_EQ(request.lanes.size(), 1u);
  const ProgressLane& lane = request.lanes[0];
  EXPECT_EQ(lane.stream, "/logs/job.log");
  EXPECT_EQ(lane.rank, 3);
  EXPECT_EQ(lane.bar, "'[rank3]: Epoch 0' at 9/400");
  ASSERT_EQ(lane.advances.size(), 2u);
  // Read within a poll of being written.
  EXPECT_LE(std::chrono::abs(lane.advances[0] - second), milliseconds(300));
  EXPECT_LE(std::chrono::abs(lane.advances[1] - third), milliseconds(300));
  EXPECT_LT(lane.first_seen, lane.advances[0]);
}

}  // namespace
}  // namespace trainwatch::capture
