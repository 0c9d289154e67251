// LatestFileWriter on a FakeEnv, whose pool work waits until the test runs it: what lands
// while a write is under way, at the stop, and once abandoned.
#include "core/latest_file_writer.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <thread>

#include "support/fake_env.h"

namespace trainwatch {
namespace {

using testing::FakeEnv;

std::string Text(const FileSystem& fs, const std::string& path) {
  auto file = fs.OpenForReading(path);
  if (!file) {
    return "(none)";
  }
  std::string text(4096, '\0');
  auto read = (*file)->ReadAt(0, std::span<char>(text.data(), text.size()));
  text.resize(read ? *read : 0);
  return text;
}

class LatestFileWriterTest : public ::testing::Test {
 protected:
  LatestFileWriterTest() {
    env_.files().MakeDirs("/state");
    env_.HoldPool();
  }
  FakeEnv env_;
  std::vector<std::string> outcomes_;
  LatestFileWriter writer_{env_, "/state/offsets.json", 0600, [this](const Status& written) {
                             outcomes_.push_back(written ? "ok" : written.error().message);
                           }};
};

TEST_F(LatestFileWriterTest, WritesOffTheLoopAndOnlyTheLatestOfWhatWaited) {
  writer_.Write("1");
  EXPECT_TRUE(writer_.writing());
  EXPECT_EQ(Text(env_.fs(), "/state/offsets.json"), "(none)") << "the loop did not write it";
  writer_.Write("2");
  writer_.Write("3");  // replaces "2", which was never written
  EXPECT_EQ(env_.pool_waiting(), 1u) << "one write at a time";
  env_.StepPool();
  EXPECT_EQ(Text(env_.fs(), "/state/offsets.json"), "1");
  ASSERT_EQ(env_.pool_waiting(), 1u) << "the latest, after it";
  env_.StepPool();
  EXPECT_EQ(Text(env_.fs(), "/state/offsets.json"), "3");
  EXPECT_FALSE(writer_.writing());
  EXPECT_EQ(outcomes_, (std::vector<std::string>{"ok", "ok"}));
}

TEST_F(LatestFileWriterTest, AWriteAtTheStopIsNotOverwrittenByAnOlderOne) {
  writer_.Write("old");
  ASSERT_TRUE(writer_.WriteNow("final"));
  env_.StepPool();  // the pool's write, handed over before, runs only now
  EXPECT_EQ(Text(env_.fs(), "/state/offsets.json"), "final");
  EXPECT_EQ(env_.pool_waiting(), 0u);
}

TEST_F(LatestFileWriterTest, AFailureIsToldAndTheNextWriteTriesAgain) {
  env_.files().FailWrites("/state/offsets.json", ENOSPC);
  writer_.Write("1");
  env_.StepPool();
  ASSERT_EQ(outcomes_.size(), 1u);
  EXPECT_NE(outcomes_[0].find("offsets.json"), std::string::npos) << outcomes_[0];
  env_.files().FailWrites("/state/offsets.json", 0);
  writer_.Write("2");
  env_.StepPool();
  EXPECT_EQ(Text(env_.fs(), "/state/offsets.json"), "2");
}

// Every pool thread held by work on a hung file system elsewhere: the offsets are written on
// the loop once the pool is late, and the pool's older write, run at last, lands nothing.
TEST_F(LatestFileWriterTest, AWriteThePoolHasNotRunForLongIsMadeOnTheLoop) {
  writer_.Write("1");
  env_.Advance(LatestFileWriter::kPoolLateAfter - std::chrono::seconds(1));
  writer_.Write("2");
  EXPECT_EQ(Text(env_.fs(), "/state/offsets.json"), "(none)") << "not late yet: it waits";
  env_.Advance(std::chrono::seconds(1));
  writer_.Write("3");
  EXPECT_EQ(Text(env_.fs(), "/state/offsets.json"), "3");
  EXPECT_EQ(outcomes_, std::vector<std::string>{"ok"});
  env_.StepPool();  // "1", run at last
  EXPECT_EQ(Text(env_.fs(), "/state/offsets.json"), "3");
  EXPECT_EQ(env_.pool_waiting(), 0u) << "nothing waited after it";
}

TEST_F(LatestFileWriterTest, AbandonedItWritesNothingMoreNotEvenWhatThePoolHolds) {
  writer_.Write("mine");
  writer_.Abandon();  // the state_dir is another daemon's now
  env_.StepPool();
  writer_.Write("later");
  EXPECT_TRUE(writer_.WriteNow("at the stop"));
  EXPECT_EQ(env_.pool_waiting(), 0u);
  EXPECT_EQ(Text(env_.fs(), "/state/offsets.json"), "(none)");
}

TEST_F(LatestFileWriterTest, DestroyedWithAWriteUnderWayItsEndTouchesNothing) {
  auto writer = std::make_unique<LatestFileWriter>(
      env_, "/state/x", 0600, [](const Status&) { FAIL() << "told after it was gone"; });
  writer->Write("x");
  writer.reset();
  env_.StepPool();
  EXPECT_EQ(Text(env_.fs(), "/state/x"), "x") << "the write itself lands";
}

}  // namespace
}  // namespace trainwatch
