// PeerWatcher on a real directory standing for the shared one: its polls run by FakeEnv's
// clock, its worker by FakeEnv's pool.
#include "cluster/peer_watcher.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "support/fake_env.h"
#include "support/file_text.h"
#include "support/temp_dir.h"

namespace trainwatch::cluster {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

void WriteWhole(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

class PeerWatcherTest : public ::testing::Test {
 protected:
  PeerWatcherTest() { fs::create_directories(Shared() + "/jobs"); }

  std::string Shared() const { return (temp_.path() / "shared").string(); }
  std::int64_t NowMs() const {
    return std::chrono::duration_cast<milliseconds>(env_.WallNow().time_since_epoch()).count();
  }
  // A peer's record as its publisher leaves it: whole, under its final name.
  void Publish(const std::string& job, const std::string& node, const std::string& id,
               std::int64_t opened_ms) {
    PeerRecord record;
    record.job_id = job;
    record.node = node;
    record.incident_id = id;
    record.kind = "crash";
    record.summary = "RuntimeError: boom";
    record.opened_ms = opened_ms;
    const std::string dir = Shared() + "/jobs/" + JobDirName(job);
    fs::create_directories(dir);
    WriteWhole(dir + "/" + PeerFileName(id, node), PeerRecordJson(record));
  }
  std::unique_ptr<PeerWatcher> Watcher(const std::vector<std::string>& jobs) {
    auto watcher = std::make_unique<PeerWatcher>(
        env_, [jobs] { return jobs; },
        [this](const std::vector<PeerWatcher::Found>& found) {
          found_.insert(found_.end(), found.begin(), found.end());
        },
        [this](const std::string& /*job*/) { return wants_records_; });
    watcher->Configure(Shared(), "gpu-0", milliseconds(2000));
    return watcher;
  }

  testing::TempDir temp_;
  testing::FakeEnv env_;
  std::vector<PeerWatcher::Found> found_;
  bool wants_records_ = true;
};

TEST_F(PeerWatcherTest, ANewRecordOfAnotherNodeIsFoundAtTheNextPollAndOnlyOnce) {
  auto watcher = Watcher({"llama-7"});
  env_.Advance(milliseconds(2000));
  EXPECT_TRUE(found_.empty());
  EXPECT_EQ(watcher->state().listings, 1u);  // no job directory yet: listed, nothing there
  Publish("llama-7", "gpu-1", "20261125T100000Z-1", NowMs());
  Publish("llama-7", "gpu-0", "20261125T100000Z-2", NowMs());  // this node's own: skipped
  env_.Advance(milliseconds(2000));
  ASSERT_EQ(found_.size(), 1u);
  EXPECT_EQ(found_[0].record.node, "gpu-1");
  EXPECT_EQ(found_[0].record.incident_id, "20261125T100000Z-1");
  EXPECT_TRUE(found_[0].fresh);
  env_.Advance(milliseconds(4000));  // two more polls: seen already
  EXPECT_EQ(found_.size(), 1u);
  EXPECT_EQ(watcher->state().listings, 4u);
  EXPECT_EQ(watcher->state().reads, 1u);  // read once, not at every poll
  EXPECT_EQ(watcher->state().records, 1u);
  EXPECT_EQ(watcher->state().jobs, std::vector<std::string>{"llama-7"});
}

TEST_F(PeerWatcherTest, AnOldRecordIsHandedOnAsNotFreshAndOtherJobsAreNotListed) {
  Publish("llama-7", "gpu-1", "old", NowMs() - 11 * 60 * 1000);    // before kFreshFor
  Publish("llama-7", "gpu-2", "recent", NowMs() - 9 * 60 * 1000);  // within it: skew, a late poll
  Publish("other-job", "gpu-1", "theirs", NowMs());
  auto watcher = Watcher({"llama-7"});
  env_.Advance(milliseconds(2000));
  ASSERT_EQ(found_.size(), 2u);
  EXPECT_EQ(found_[0].record.incident_id, "old");  // oldest first
  EXPECT_FALSE(found_[0].fresh);
  EXPECT_EQ(found_[1].record.incident_id, "recent");
  EXPECT_TRUE(found_[1].fresh);
}

TEST_F(PeerWatcherTest, AnUnreadableRecordIsRetriedThenGivenUp) {
  auto watcher = Watcher({"job"});
  fs::create_directories(Shared() + "/jobs/job");
  WriteWhole(Shared() + "/jobs/job/x@gpu-1.json", "{\"version\": 1, \"job\": ");  // half
  env_.Advance(milliseconds(2000));
  EXPECT_TRUE(found_.empty());
  EXPECT_EQ(watcher->state().reads, 1u);
  Publish("job", "gpu-1", "x", NowMs());  // the rest of it arrives
  env_.Advance(milliseconds(2000));
  ASSERT_EQ(found_.size(), 1u);
  EXPECT_EQ(found_[0].record.incident_id, "x");

  WriteWhole(Shared() + "/jobs/job/y@gpu-1.json", "garbage");
  for (int poll = 0; poll < PeerWatcher::kUnreadableTries + 2; ++poll) {
    env_.Advance(milliseconds(2000));
  }
  EXPECT_EQ(found_.size(), 1u);
  // Tried kUnreadableTries times, then left alone.
  EXPECT_EQ(watcher->state().reads, 2u + PeerWatcher::kUnreadableTries);
}

TEST_F(PeerWatcherTest, ASlowSharedDirectoryHoldsOneWorkerAndNoPollPilesUp) {
  auto watcher = Watcher({"job"});
  env_.HoldPool();
  env_.Advance(milliseconds(2000));
  env_.Advance(milliseconds(2000));
  env_.Advance(milliseconds(2000));
  EXPECT_EQ(env_.pool_waiting(), 1u);  // the first worker hangs; the later polls wait for it
  Publish("job", "gpu-1", "x", NowMs());
  env_.ReleasePool();
  env_.RunUntilIdle();
  EXPECT_EQ(watcher->state().polls, 1u);
  env_.Advance(milliseconds(2000));
  ASSERT_EQ(found_.size(), 1u);
}

TEST_F(PeerWatcherTest, AGoneSharedDirectoryIsSaidAndWhatWasSeenStaysSeen) {
  Publish("job", "gpu-1", "x", NowMs());
  auto watcher = Watcher({"job"});
  env_.Advance(milliseconds(2000));
  ASSERT_EQ(found_.size(), 1u);
  // The mount goes: the job directory is not listable (a file stands where it was).
  fs::rename(Shared(), Shared() + ".away");
  WriteWhole(Shared(), "not a directory");
  env_.Advance(milliseconds(2000));
  EXPECT_NE(watcher->state().error, "");
  // It comes back with the same record: not new.
  fs::remove(Shared());
  fs::rename(Shared() + ".away", Shared());
  env_.Advance(milliseconds(2000));
  EXPECT_EQ(watcher->state().error, "");
  EXPECT_EQ(found_.size(), 1u);
}

TEST_F(PeerWatcherTest, RecordsOfAJobAlreadyCapturedForAreListedButNotRead) {
  auto watcher = Watcher({"job"});
  wants_records_ = false;  // this node captured for the job's failure already
  for (int node = 1; node <= 50; ++node) {
    Publish("job", "gpu-" + std::to_string(node), "x", NowMs());
  }
  env_.Advance(milliseconds(2000));
  EXPECT_TRUE(found_.empty());
  EXPECT_EQ(watcher->state().reads, 0u);
  EXPECT_EQ(watcher->state().unread, 50u);
  wants_records_ = true;  // the cooldown passed: only what is new is read
  Publish("job", "gpu-51", "y", NowMs());
  env_.Advance(milliseconds(2000));
  ASSERT_EQ(found_.size(), 1u);
  EXPECT_EQ(found_[0].record.node, "gpu-51");
  EXPECT_EQ(watcher->state().reads, 1u);
}

TEST_F(PeerWatcherTest, ARecordIsSeenByItsFileNameWhateverItSays) {
  auto watcher = Watcher({"job"});
  Publish("job", "gpu-9", "x", NowMs());
  fs::rename(Shared() + "/jobs/job/x@gpu-9.json", Shared() + "/jobs/job/x@renamed.json");
  env_.Advance(milliseconds(2000));
  env_.Advance(milliseconds(2000));
  EXPECT_EQ(found_.size(), 1u);
  EXPECT_EQ(watcher->state().reads, 1u);
}

// The red team's hostile peer: a FIFO, a link to a root-only file and a 200 MB record in the
// shared directory. None blocks the worker, none is followed, none is read past the cap; the
// honest record beside them is still found.
TEST_F(PeerWatcherTest, AFifoALinkAndAHugeRecordAreRefusedAndTheRestIsRead) {
  auto watcher = Watcher({"job"});
  const std::string dir = Shared() + "/jobs/job";
  fs::create_directories(dir);
  ASSERT_EQ(::mkfifo((dir + "/fifo@gpu-6.json").c_str(), 0600), 0);
  const std::string secret = temp_.Write("secret", "{}");
  fs::create_symlink(secret, dir + "/link@gpu-7.json");
  {
    std::ofstream huge(dir + "/huge@gpu-8.json", std::ios::binary);
    huge << "{\"version\": 1, \"job_id\": \"job\", \"node\": \"gpu-8\", \"incident_id\": "
            "\"i\", \"summary\": \"";
    huge << std::string(8 << 20, 'x') << "\"}";
  }
  Publish("job", "gpu-1", "honest", NowMs());
  env_.Advance(milliseconds(2000));  // FakeEnv runs the worker inline: a block would hang here
  ASSERT_EQ(found_.size(), 1u);
  EXPECT_EQ(found_[0].record.incident_id, "honest");
  env_.Advance(milliseconds(2000 * PeerWatcher::kUnreadableTries));
  EXPECT_EQ(found_.size(), 1u);
}

TEST_F(PeerWatcherTest, AFloodOfRecordsIsReadAFewHundredAPoll) {
  auto watcher = Watcher({"job"});
  const std::size_t flood = PeerWatcher::kMaxReadsPerPoll + 10;
  for (std::size_t i = 0; i < flood; ++i) {
    Publish("job", "gpu-1", std::string("r") += std::to_string(i), NowMs());
  }
  env_.Advance(milliseconds(2000));
  EXPECT_EQ(found_.size(), PeerWatcher::kMaxReadsPerPoll);
  env_.Advance(milliseconds(2000));
  EXPECT_EQ(found_.size(), flood);  // the rest at the next poll, none twice
  env_.Advance(milliseconds(2000));
  EXPECT_EQ(found_.size(), flood);
}

// A peer floods the job's directory past kMaxRecordsPerJob: the listing stops at the cap (the
// rest is never read into memory), says so in the state, and the names it holds are taken.
TEST_F(PeerWatcherTest, AFloodedDirectoryIsListedUpToTheCapAndSaidCut) {
  auto watcher = Watcher({"job"});
  wants_records_ = false;  // the names alone matter here
  const std::string dir = Shared() + "/jobs/" + JobDirName("job");
  fs::create_directories(dir);
  const std::size_t flood = PeerWatcher::kMaxRecordsPerJob + 50;
  for (std::size_t i = 0; i < flood; ++i) {
    std::string id = "r";  // appended: GCC 12's false -Wrestrict on "r" + std::string
    id += std::to_string(i);
    std::ofstream(dir + "/" + PeerFileName(id, "gpu-1"));
  }
  env_.Advance(milliseconds(2000));
  EXPECT_EQ(watcher->state().cut_listings, 1u);
  EXPECT_EQ(watcher->state().unread, PeerWatcher::kMaxRecordsPerJob);
  EXPECT_EQ(watcher->state().error, "");
  env_.Advance(milliseconds(2000));
  EXPECT_EQ(watcher->state().cut_listings, 2u);  // each poll's listing stops there
}

TEST_F(PeerWatcherTest, NoJobHereListsNothing) {
  auto watcher = Watcher({});
  env_.Advance(milliseconds(10000));
  EXPECT_EQ(watcher->state().polls, 0u);
  EXPECT_EQ(watcher->state().listings, 0u);
}

}  // namespace
}  // namespace trainwatch::cluster
