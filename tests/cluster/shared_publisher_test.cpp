// SharedPublisher on real directories (the outbox, a "shared" one that comes and goes), its
// worker run by FakeEnv's pool and its retries by FakeEnv's clock.
#include "cluster/shared_publisher.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "support/fake_env.h"
#include "support/file_text.h"
#include "support/temp_dir.h"

namespace trainwatch::cluster {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

class SharedPublisherTest : public ::testing::Test {
 protected:
  std::string Outbox() const { return (temp_.path() / "state/outbox").string(); }
  std::string Shared() const { return (temp_.path() / "shared").string(); }
  std::string Landed(const std::string& job, const std::string& file) const {
    return Shared() + "/jobs/" + job + "/" + file;
  }
  testing::TempDir temp_;
  testing::FakeEnv env_;
};

TEST_F(SharedPublisherTest, ARecordLandsWholeAndLeavesTheOutbox) {
  fs::create_directories(Shared() + "/jobs");
  SharedPublisher publisher(env_, Outbox());
  publisher.Configure(Shared(), "gpu-17", std::chrono::hours(24));
  ASSERT_TRUE(publisher.Publish("llama-7", "a@gpu-17.json", "{\"v\": 1}").ok());
  env_.RunUntilIdle();
  EXPECT_EQ(testing::ReadFile(Landed("llama-7", "a@gpu-17.json")), "{\"v\": 1}");
  EXPECT_FALSE(fs::exists(Outbox() + "/llama-7/a@gpu-17.json"));
  EXPECT_EQ(publisher.state().published, 1u);
  EXPECT_EQ(publisher.state().pending, 0u);
  EXPECT_EQ(publisher.state().error, "");
  // Rewritten whole with its bundle: the same name, the newer content.
  ASSERT_TRUE(publisher.Publish("llama-7", "a@gpu-17.json", "{\"v\": 2}").ok());
  env_.RunUntilIdle();
  EXPECT_EQ(testing::ReadFile(Landed("llama-7", "a@gpu-17.json")), "{\"v\": 2}");
}

TEST_F(SharedPublisherTest, AGoneSharedDirectoryKeepsRecordsUntilItIsBackEvenAcrossARestart) {
  // The mount point is a file: nothing can be created under it (a mount that went away).
  testing::Append(Shared(), "not a directory");
  {
    SharedPublisher publisher(env_, Outbox());
    publisher.Configure(Shared(), "gpu-17", std::chrono::hours(24));
    ASSERT_TRUE(publisher.Publish("job", "a@gpu-17.json", "{\"a\": 1}").ok());
    env_.RunUntilIdle();
    EXPECT_NE(publisher.state().error, "");
    EXPECT_EQ(publisher.state().pending, 1u);
    env_.Advance(milliseconds(2000));  // the first retry, failing again
    EXPECT_EQ(publisher.state().pending, 1u);
  }
  // A restart: the outbox is still there.
  EXPECT_TRUE(fs::exists(Outbox() + "/job/a@gpu-17.json"));
  fs::remove(Shared());
  fs::create_directories(Shared() + "/jobs");
  SharedPublisher publisher(env_, Outbox());
  publisher.Configure(Shared(), "gpu-17", std::chrono::hours(24));
  env_.RunUntilIdle();
  EXPECT_EQ(testing::ReadFile(Landed("job", "a@gpu-17.json")), "{\"a\": 1}");
  EXPECT_EQ(publisher.state().error, "");
  EXPECT_EQ(publisher.state().published, 1u);
}

TEST_F(SharedPublisherTest, RetriesBackOffAndResumeWhenTheDirectoryReturns) {
  testing::Append(Shared(), "not a directory");
  SharedPublisher publisher(env_, Outbox());
  publisher.Configure(Shared(), "gpu-17", std::chrono::hours(24));
  ASSERT_TRUE(publisher.Publish("job", "a@gpu-17.json", "{}").ok());
  env_.RunUntilIdle();
  env_.Advance(milliseconds(2000));  // retry 1 (then 4 s)
  fs::remove(Shared());
  fs::create_directories(Shared() + "/jobs");
  env_.Advance(milliseconds(3000));
  EXPECT_FALSE(fs::exists(Landed("job", "a@gpu-17.json"))) << "backed off to 4 s";
  env_.Advance(milliseconds(1000));
  EXPECT_TRUE(fs::exists(Landed("job", "a@gpu-17.json")));
  EXPECT_EQ(publisher.state().error, "");
}

TEST_F(SharedPublisherTest, AnUnmountedMountPointGetsNothingWrittenOnTheLocalDisk) {
  fs::create_directories(Shared());  // the empty mount point, its file system not mounted
  SharedPublisher publisher(env_, Outbox());
  publisher.Configure(Shared(), "gpu-17", std::chrono::hours(24));
  ASSERT_TRUE(publisher.Publish("job", "a@gpu-17.json", "{}").ok());
  env_.RunUntilIdle();
  EXPECT_TRUE(fs::is_empty(Shared()));
  EXPECT_NE(publisher.state().error.find("/jobs is not a directory: create it once"),
            std::string::npos)
      << publisher.state().error;
  EXPECT_EQ(publisher.state().pending, 1u);
}

TEST_F(SharedPublisherTest, RecordsAndTemporariesPastTheRetentionAreRemovedWhoeverWroteThem) {
  fs::create_directories(Shared() + "/jobs/old");
  testing::Append(Landed("old", "a@gpu-17.json"), "{}");
  testing::Append(Landed("old", "b@gpu-18.json"), "{}");
  const auto long_ago = fs::file_time_type::clock::now() - std::chrono::hours(48);
  fs::last_write_time(Landed("old", "a@gpu-17.json"), long_ago);
  fs::last_write_time(Landed("old", "b@gpu-18.json"), long_ago);
  testing::Append(Landed("old", "c@gpu-19.json.tmp"), "{");  // a writer killed mid-write
  fs::last_write_time(Landed("old", "c@gpu-19.json.tmp"), long_ago);
  fs::create_directories(Shared() + "/jobs/recent");
  testing::Append(Landed("recent", "d@gpu-18.json"), "{}");
  fs::create_directories(Shared() + "/jobs/empty");
  SharedPublisher publisher(env_, Outbox());
  publisher.Configure(Shared(), "gpu-17", std::chrono::hours(24));
  env_.RunUntilIdle();
  EXPECT_FALSE(fs::exists(Landed("old", "a@gpu-17.json")));
  EXPECT_FALSE(fs::exists(Landed("old", "b@gpu-18.json"))) << "a node gone for good";
  EXPECT_FALSE(fs::exists(Shared() + "/jobs/old"));
  EXPECT_TRUE(fs::exists(Landed("recent", "d@gpu-18.json")));
  EXPECT_FALSE(fs::exists(Shared() + "/jobs/empty"));
}

}  // namespace
}  // namespace trainwatch::cluster
