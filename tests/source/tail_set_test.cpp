// TailSet's rotation and copy decisions, driven one file-system event at a time on a FakeEnv:
// every line once, none lost and none repeated, through rename, copytruncate (with the copy
// found before or after the truncation, and a copy still being written), a file deleted while
// its writer still writes, a restart, an inode number reused while the daemon was down, and
// polling where inotify sees nothing. No sleeps, no real files.
#include "source/tail_set.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>

#include "support/fake_env.h"

namespace trainwatch::source {
namespace {

using std::chrono::milliseconds;
using testing::FakeEnv;

// A training log line of 24 bytes; `n` keeps every line distinct.
std::string Line(int n) {
  char text[32];
  std::snprintf(text, sizeof text, "step %05d loss 1.%04d\n", n, n);
  return text;
}

std::string Lines(int from, int to) {
  std::string text;
  for (int n = from; n <= to; ++n) {
    text += Line(n);
  }
  return text;
}

class TailSetTest : public ::testing::Test {
 protected:
  TailSetTest() { env_.files().MakeDirs("/logs"); }

  void Start(std::vector<std::string> paths = {"/logs/train.log*"},
             std::vector<SavedTail> saved = {}, bool first_start = true) {
    config::SourceConfig source;
    source.name = "train";
    source.paths = std::move(paths);
    TailSet::Hooks hooks;
    hooks.on_open = [](TailedFile&) { return true; };
    hooks.on_batch = [this](TailedFile& file, const LineBatch& batch, std::uint64_t) {
      for (std::size_t i = 0; i < batch.size(); ++i) {
        read_.emplace_back(std::string(batch.Record(i)) + "\n", file.tail.path());
      }
    };
    hooks.on_pending = [](TailedFile&) {};
    hooks.on_changed = [](TailedFile&) {};
    hooks.on_truncated = [this](TailedFile&) { ++truncations_; };
    hooks.on_close = [this](TailedFile& file) { closed_.push_back(file.tail.path()); };
    hooks.durable = [](const TailedFile& file) { return file.tail.position(); };
    tails_ = std::make_unique<TailSet>(env_, source, watch_, hooks, std::move(saved), first_start);
    tails_->UseDescriptorBudget(budget_);
    tails_->Start();
    env_.RunUntilIdle();
  }

  // The loop runs: events delivered, the debounced rescan (10 ms) done.
  void Settle() {
    env_.RunUntilIdle();
    env_.Advance(milliseconds(20));
  }
  // Started on /logs/train.log* with lines 1..`lines` of a live writer read; the writer's
  // descriptor, to write on through a rename or a delete.
  std::shared_ptr<testing::FakeFileSystem::Inode> StartWithWriter(int lines) {
    Start();
    auto writer = env_.files().OpenForWriting("/logs/train.log");
    env_.files().AppendHeld(writer, Lines(1, lines));
    Settle();
    return writer;
  }
  // Lines 1..`lines` read, then the TailSet stops as the daemon does; its saved positions.
  std::vector<SavedTail> ReadThenStop(int lines) {
    StartWithWriter(lines);
    std::vector<SavedTail> saved;
    tails_->SaveTo(saved);
    tails_.reset();
    return saved;
  }
  // The sweep's turn comes (every rescan_interval).
  void SweepLater() {
    env_.Advance(watch_.rescan_interval);
    tails_->Sweep(env_.SteadyNow());
  }

  // The lines read so far, in order, text only.
  std::string Text() const {
    std::string text;
    for (const auto& [line, path] : read_) {
      text += line;
    }
    return text;
  }
  // Each line of `from`..`to` read exactly once, whatever the order.
  ::testing::AssertionResult EachOnce(int from, int to) const {
    std::map<std::string, int> seen;
    for (const auto& [line, path] : read_) {
      ++seen[line];
    }
    for (int n = from; n <= to; ++n) {
      if (seen[Line(n)] != 1) {
        return ::testing::AssertionFailure()
               << "line " << n << " read " << seen[Line(n)] << " times; read:\n"
               << Text();
      }
      seen.erase(Line(n));
    }
    if (!seen.empty()) {
      return ::testing::AssertionFailure() << "also read " << seen.begin()->first;
    }
    return ::testing::AssertionSuccess();
  }

  FakeEnv env_;
  config::WatchConfig watch_;
  std::shared_ptr<DescriptorBudget> budget_;
  std::unique_ptr<TailSet> tails_;
  std::vector<std::pair<std::string, std::string>> read_;  // line, the path it came from
  std::vector<std::string> closed_;
  int truncations_ = 0;
};

TEST_F(TailSetTest, FilesThereAtTheFirstStartAreReadFromTheirEndNewOnesFromTheirStart) {
  env_.files().Append("/logs/train.log", Lines(1, 3));
  Start({"/logs/*.log"});
  EXPECT_EQ(Text(), "");
  env_.files().Append("/logs/train.log", Line(4));
  env_.files().Append("/logs/rank1.log", Lines(5, 6));  // a new file
  Settle();
  EXPECT_EQ(env_.watched_dirs(), std::set<std::string>{"/logs"});
  EXPECT_TRUE(EachOnce(4, 6));
}

TEST_F(TailSetTest, ARenamedFileIsFinishedAndTheNewOneReadFromItsStart) {
  const auto writer = StartWithWriter(3);
  ASSERT_TRUE(EachOnce(1, 3));
  // logrotate renames; the writer, not yet told, writes on to the old inode; then reopens.
  env_.files().AppendHeld(writer, Line(4));
  env_.files().Rename("/logs/train.log", "/logs/train.log.1");
  env_.files().AppendHeld(writer, Line(5));
  env_.files().Append("/logs/train.log", Line(6));
  Settle();
  EXPECT_TRUE(EachOnce(1, 6));
  EXPECT_EQ(read_.back().second, "/logs/train.log");
  // Lines 4 and 5 were read from the old inode when the first event came, before the rename
  // was known; the file is followed on under its new name.
  std::set<std::string> followed;
  for (const auto& [id, file] : tails_->files()) {
    followed.insert(file->tail.path());
  }
  EXPECT_EQ(followed, (std::set<std::string>{"/logs/train.log", "/logs/train.log.1"}));
  EXPECT_EQ(truncations_, 0);
}

TEST_F(TailSetTest, AFileGoneFromTheGlobsIsReadForItsGraceThenClosed) {
  Start({"/logs/train.log"});
  const auto writer = env_.files().OpenForWriting("/logs/train.log");
  env_.files().AppendHeld(writer, Lines(1, 2));
  Settle();
  env_.files().Rename("/logs/train.log", "/logs/old/train.log");  // out of the globs
  Settle();
  // No event reaches us for the renamed file: the sweep reads what its writer still adds.
  env_.files().AppendHeld(writer, Line(3));
  SweepLater();
  EXPECT_TRUE(EachOnce(1, 3));
  EXPECT_TRUE(closed_.empty()) << "closed before its grace";
  SweepLater();
  // Under the name it was followed by: where it went is out of the source's sight.
  EXPECT_EQ(closed_, std::vector<std::string>{"/logs/train.log"});
  EXPECT_TRUE(tails_->files().empty());
}

TEST_F(TailSetTest, AFileDeletedWhileItsWriterWritesIsReadToItsEndThenClosed) {
  const auto writer = StartWithWriter(2);
  env_.files().AppendHeld(writer, Line(3));
  env_.files().Remove("/logs/train.log");
  Settle();
  EXPECT_TRUE(EachOnce(1, 3));
  env_.files().AppendHeld(writer, Line(4));  // to an inode with no name: no event at all
  Settle();
  EXPECT_TRUE(EachOnce(1, 3));
  SweepLater();
  EXPECT_TRUE(EachOnce(1, 4));
  SweepLater();
  EXPECT_EQ(closed_, std::vector<std::string>{"/logs/train.log"});
}

TEST_F(TailSetTest, CopytruncateContinuesInTheCopyWhereTheOriginalWasLeft) {
  const auto writer = StartWithWriter(20);  // 460 bytes: a full fingerprint
  ASSERT_TRUE(EachOnce(1, 20));
  // Written but not yet read when logrotate copies and truncates; then the writer goes on.
  env_.files().AppendHeld(writer, Lines(21, 22));
  env_.files().Copy("/logs/train.log", "/logs/train.log.1");
  env_.files().Truncate("/logs/train.log");
  env_.files().AppendHeld(writer, Line(23));
  Settle();
  EXPECT_TRUE(EachOnce(1, 23));
  EXPECT_EQ(truncations_, 1);
}

TEST_F(TailSetTest, ACopySeenBeforeTheTruncationWaitsForIt) {
  const auto writer = StartWithWriter(20);
  env_.files().AppendHeld(writer, Line(21));
  env_.files().Copy("/logs/train.log", "/logs/train.log.1");
  Settle();  // the copy is there; the original is not truncated yet
  EXPECT_TRUE(EachOnce(1, 21)) << "the copy is parked, not read as a new file";
  EXPECT_EQ(tails_->parked_copies(), std::set<std::string>{"/logs/train.log.1"});
  env_.files().Truncate("/logs/train.log");
  env_.files().AppendHeld(writer, Line(22));
  Settle();
  EXPECT_TRUE(EachOnce(1, 22));
  EXPECT_TRUE(tails_->parked_copies().empty());
}

TEST_F(TailSetTest, ACopyStillBeingWrittenIsNotReadAsANewFile) {
  const auto writer = StartWithWriter(20);
  env_.files().AppendHeld(writer, Line(21));
  // copytruncate's copy loop: 100 bytes so far, fewer than the fingerprint it will match.
  env_.files().Copy("/logs/train.log", "/logs/train.log.1", 100);
  Settle();
  EXPECT_TRUE(EachOnce(1, 21));
  env_.files().Copy("/logs/train.log", "/logs/train.log.1");  // the copy completes
  env_.files().Truncate("/logs/train.log");
  env_.files().AppendHeld(writer, Line(22));
  Settle();
  EXPECT_TRUE(EachOnce(1, 22));
}

TEST_F(TailSetTest, ACopyShorterThanWhatWasReadFromTheOriginalIsNotReadAgain) {
  // logrotate copies, the writer writes on and we read that from the original, then logrotate
  // truncates: the copy ends before where the original was left. Nothing in it is new.
  const auto writer = StartWithWriter(20);
  env_.files().Copy("/logs/train.log", "/logs/train.log.1");
  Settle();  // parked until the truncation
  env_.files().AppendHeld(writer, Lines(21, 22));
  Settle();
  env_.files().Truncate("/logs/train.log");
  env_.files().AppendHeld(writer, Line(23));
  Settle();
  EXPECT_TRUE(EachOnce(1, 23));
}

TEST_F(TailSetTest, ACopytruncateWhileTheDaemonWasDownContinuesInTheCopy) {
  const std::vector<SavedTail> saved = ReadThenStop(20);
  // Down (kill -9, or a restart): logrotate copies and truncates, the writer writes on.
  env_.files().Append("/logs/train.log", Line(21));
  env_.files().Copy("/logs/train.log", "/logs/train.log.1");
  env_.files().Truncate("/logs/train.log");
  env_.files().Append("/logs/train.log", Line(22));
  Start({"/logs/train.log*"}, saved, /*first_start=*/false);
  env_.files().Append("/logs/train.log", Line(23));
  Settle();
  EXPECT_TRUE(EachOnce(1, 23));
  // Named as the original's continuation: what the original fired must not fire again here.
  const FileId copy{testing::FakeFileSystem::kDevice, env_.files().InodeOf("/logs/train.log.1")};
  ASSERT_TRUE(tails_->files().count(copy));
  EXPECT_EQ(tails_->files().at(copy)->tail.copy_of(), saved.at(0).id);
}

TEST_F(TailSetTest, ACopyFoundBeforeItsUntruncatedOriginalAfterARestartWaitsForTheTruncation) {
  // "train-1.log" sorts before "train.log": the copy is seen first, its original not yet cut.
  const std::vector<SavedTail> saved = ReadThenStop(20);
  env_.files().Append("/logs/train.log", Line(21));
  env_.files().Copy("/logs/train.log", "/logs/train-1.log");
  Start({"/logs/train*.log"}, saved, /*first_start=*/false);
  Settle();
  EXPECT_TRUE(EachOnce(1, 21));
  env_.files().Truncate("/logs/train.log");
  env_.files().Append("/logs/train.log", Line(22));
  Settle();
  EXPECT_TRUE(EachOnce(1, 22));
}

TEST_F(TailSetTest, AShortNewFileThatNeverBecomesACopyIsReadAfterTheWait) {
  StartWithWriter(20);
  env_.files().Append("/logs/train.log.1", "a new rank\n");  // named like a copy, short
  Settle();
  EXPECT_EQ(Text().find("a new rank"), std::string::npos);
  env_.Advance(milliseconds(2100));
  EXPECT_EQ(Text(), Lines(1, 20) + "a new rank\n");
}

// Security round 3, item 11: logrotate's second copytruncate copies over the existing
// train.log.1 in place (same inode, truncated and refilled). That is a copy of what was read
// from the original, not a file to read again from its start.
TEST_F(TailSetTest, ASecondCopytruncateOverTheOldCopyInPlaceReadsNothingTwice) {
  const auto writer = StartWithWriter(20);
  env_.files().Copy("/logs/train.log", "/logs/train.log.1");
  env_.files().Truncate("/logs/train.log");
  env_.files().AppendHeld(writer, Lines(21, 40));
  Settle();
  ASSERT_TRUE(EachOnce(1, 40));
  // The second rotation: the copy goes over train.log.1, then the original is cut.
  env_.files().AppendHeld(writer, Line(41));
  env_.files().Copy("/logs/train.log", "/logs/train.log.1");
  Settle();
  env_.files().Truncate("/logs/train.log");
  env_.files().AppendHeld(writer, Line(42));
  Settle();
  env_.Advance(milliseconds(2100));  // past any wait for a copy still being written
  EXPECT_TRUE(EachOnce(1, 42));
}

// A daemon that falls behind (CI caught it, a loaded node): the copy waits for its original's
// truncation, but before the daemon reads that truncation the next rotation has already
// replaced the copy with one of what the original held after it. The name waiting is the new
// copy's now: a copy of lines still to be read from the original, not a file to read from its
// start.
TEST_F(TailSetTest, ACopyReplacedByTheNextRotationBeforeTheTruncationWasSeenReadsNothingTwice) {
  const auto writer = StartWithWriter(20);
  env_.files().Copy("/logs/train.log", "/logs/train.log.1");
  Settle();
  ASSERT_EQ(tails_->parked_copies(), std::set<std::string>{"/logs/train.log.1"});
  // All of this before the daemon's next turn: the cut, more lines, the next rotation's copy.
  env_.files().Truncate("/logs/train.log");
  env_.files().AppendHeld(writer, Lines(21, 40));
  env_.files().Remove("/logs/train.log.1");
  env_.files().Copy("/logs/train.log", "/logs/train.log.1");
  Settle();
  env_.Advance(milliseconds(2100));
  EXPECT_TRUE(EachOnce(1, 40));
  env_.files().Truncate("/logs/train.log");
  env_.files().AppendHeld(writer, Line(41));
  Settle();
  env_.Advance(milliseconds(2100));
  EXPECT_TRUE(EachOnce(1, 41));
}

// The same, with the copy found first: polled, not watched, the rescan that finds the copy
// (train-1.log sorts before train.log) comes before any read of the original's cut.
TEST_F(TailSetTest, ACopyOfWhatAnOriginalHoldsSinceAnUnseenCutIsACopyNotANewFile) {
  watch_.mode = config::WatchMode::kPoll;
  watch_.poll_interval = std::chrono::hours(1);  // the sweep alone reads
  Start({"/logs/train*.log"});
  const auto writer = env_.files().OpenForWriting("/logs/train.log");
  env_.files().AppendHeld(writer, Lines(1, 20));
  env_.Advance(watch_.rescan_interval);
  SweepLater();
  ASSERT_TRUE(EachOnce(1, 20));
  env_.files().Truncate("/logs/train.log");
  env_.files().AppendHeld(writer, Lines(21, 50));
  env_.files().Copy("/logs/train.log", "/logs/train-1.log");
  env_.Advance(watch_.rescan_interval);  // the rescan matches the copy; no sweep yet
  SweepLater();
  env_.Advance(milliseconds(2100));
  SweepLater();
  EXPECT_TRUE(EachOnce(1, 50));
  env_.files().Truncate("/logs/train.log");
  env_.files().AppendHeld(writer, Line(51));
  for (int i = 0; i < 4; ++i) {
    SweepLater();
    env_.Advance(milliseconds(1000));
  }
  EXPECT_TRUE(EachOnce(1, 51));
}

// The same rewrite found by the sweep (no inotify: a network file system, or a lost event),
// which walks every followed file: matched again after the walk, not inside it (closing the
// file there freed what the walk stood on).
TEST_F(TailSetTest, ACopyRewrittenInPlaceFoundByTheSweepIsMatchedAgainAfterIt) {
  watch_.mode = config::WatchMode::kPoll;
  watch_.poll_interval = std::chrono::hours(1);  // the sweep alone reads
  Start();
  const auto writer = env_.files().OpenForWriting("/logs/train.log");
  env_.files().AppendHeld(writer, Lines(1, 20));
  env_.Advance(watch_.rescan_interval);
  SweepLater();
  env_.files().Copy("/logs/train.log", "/logs/train.log.1");
  env_.files().Truncate("/logs/train.log");
  env_.files().AppendHeld(writer, Lines(21, 40));
  SweepLater();
  env_.Advance(watch_.rescan_interval);
  SweepLater();
  ASSERT_TRUE(EachOnce(1, 40));
  env_.files().AppendHeld(writer, Line(41));
  env_.files().Copy("/logs/train.log", "/logs/train.log.1");  // in place, over the old copy
  SweepLater();
  env_.files().Truncate("/logs/train.log");
  env_.files().AppendHeld(writer, Line(42));
  for (int i = 0; i < 4; ++i) {
    SweepLater();
    env_.Advance(milliseconds(1000));
  }
  EXPECT_TRUE(EachOnce(1, 42));
}

// Item 11 too: killed (kill -9) right after a copytruncate, before the copy was matched to its
// original. The saved state still holds where the original was, so the restart continues in
// the copy instead of reading it from its start.
TEST_F(TailSetTest, AKillRightAfterACopytruncateLosesNoPositionAndRepeatsNothing) {
  const auto writer = StartWithWriter(20);
  env_.files().AppendHeld(writer, Line(21));
  env_.files().Truncate("/logs/train.log");  // the original is cut first, as the daemon sees it
  env_.files().AppendHeld(writer, Line(22));
  Settle();  // the truncation is read: 22 from the new start; no copy yet
  std::vector<SavedTail> saved;
  tails_->SaveTo(saved);
  tails_.reset();  // killed: what SaveTo wrote last is all there is
  // The copy lands while the daemon is down (logrotate's copy was slower than the cut here).
  env_.files().Append("/logs/train.log.1", Lines(1, 21));
  Start({"/logs/train.log*"}, saved, /*first_start=*/false);
  env_.files().AppendHeld(writer, Line(23));
  Settle();
  env_.Advance(milliseconds(2100));
  EXPECT_TRUE(EachOnce(1, 23));
}

TEST_F(TailSetTest, ARestartResumesFromTheSavedPositionsWithoutRepeats) {
  const std::vector<SavedTail> saved = ReadThenStop(3);
  env_.files().Append("/logs/train.log", Lines(4, 5));  // written while the daemon was down
  Start({"/logs/train.log*"}, saved, /*first_start=*/false);
  env_.files().Append("/logs/train.log", Line(6));
  Settle();
  EXPECT_TRUE(EachOnce(1, 6));
}

TEST_F(TailSetTest, AnInodeNumberReusedWhileTheDaemonWasDownIsANewFile) {
  const std::vector<SavedTail> saved = ReadThenStop(3);
  read_.clear();
  // The job's next run: its log deleted and made again, given the freed inode number.
  const std::uint64_t inode = env_.files().InodeOf("/logs/train.log");
  env_.files().Remove("/logs/train.log");
  env_.files().Append("/logs/train.log", Lines(101, 110), inode);
  Start({"/logs/train.log*"}, saved, /*first_start=*/false);
  EXPECT_TRUE(EachOnce(101, 110)) << "read from its start, not from the old offset";
}

TEST_F(TailSetTest, PollingFindsWritesInotifyCannotSee) {
  watch_.mode = config::WatchMode::kPoll;
  watch_.poll_interval = milliseconds(500);
  Start();
  EXPECT_TRUE(env_.watched_dirs().empty());
  env_.files().Append("/logs/train.log", Lines(1, 2));
  Settle();
  EXPECT_EQ(Text(), "") << "no watch: found at the next rescan";
  env_.Advance(watch_.rescan_interval);
  EXPECT_TRUE(EachOnce(1, 2));
  EXPECT_EQ(env_.polled_files(), std::set<std::string>{"/logs/train.log"});
  env_.files().Append("/logs/train.log", Line(3));
  env_.RunUntilIdle();
  EXPECT_TRUE(EachOnce(1, 2));
  env_.Advance(watch_.poll_interval);
  EXPECT_TRUE(EachOnce(1, 3));
}

TEST_F(TailSetTest, NetworkFileSystemsArePolledAsWellAsWatched) {
  env_.files().SetKind("/logs", FileSystemKind::kNetwork);
  Start();
  env_.files().Append("/logs/train.log", Line(1));
  Settle();
  EXPECT_EQ(env_.polled_files(), std::set<std::string>{"/logs/train.log"});
  EXPECT_EQ(env_.watched_dirs(), std::set<std::string>{"/logs"});
}

TEST_F(TailSetTest, ALogDirectoryMadeLaterIsWatchedFromItsParent) {
  Start({"/runs/*/rank*.log"});
  env_.files().MakeDirs("/runs");
  Settle();
  EXPECT_EQ(env_.watched_dirs(), std::set<std::string>{"/runs"});
  env_.files().Append("/runs/job7/rank0.log", Line(1));
  Settle();
  EXPECT_EQ(env_.watched_dirs(), (std::set<std::string>{"/runs", "/runs/job7"}));
  EXPECT_TRUE(EachOnce(1, 1));
}

TEST_F(TailSetTest, AFastWriterIsReadInBudgetedTurns) {
  Start();
  env_.files().Append("/logs/train.log", "");
  Settle();
  // Three read budgets' worth at once: read over several loop turns, all of it.
  const int lines = static_cast<int>(3 * TailSet::kReadBudget / Line(1).size());
  env_.files().Append("/logs/train.log", Lines(1, lines));
  Settle();
  EXPECT_TRUE(EachOnce(1, lines));
}

TEST_F(TailSetTest, FilesPastTheDescriptorBudgetAreListedAndFollowedWhenOneIsFree) {
  budget_ = std::make_shared<DescriptorBudget>(2);
  Start({"/logs/*.log"});
  env_.files().Append("/logs/a.log", Line(1));
  env_.files().Append("/logs/b.log", Line(2));
  env_.files().Append("/logs/c.log", Line(3));
  Settle();
  EXPECT_EQ(tails_->files().size(), 2u);
  EXPECT_EQ(budget_->used(), 2u);
  ASSERT_EQ(tails_->unwatched().size(), 1u);
  EXPECT_EQ(tails_->unwatched().begin()->first, "/logs/c.log");
  EXPECT_NE(tails_->unwatched().begin()->second.find("2 log files are open"), std::string::npos)
      << tails_->unwatched().begin()->second;
  EXPECT_TRUE(EachOnce(1, 2));
  // Meanwhile it is read in turn: opened for its turn each second, read, closed again.
  EXPECT_EQ(tails_->in_turn(), 1u);
  env_.Advance(milliseconds(1000));
  tails_->Sweep(env_.SteadyNow());
  EXPECT_TRUE(EachOnce(1, 3));
  EXPECT_EQ(budget_->used(), 2u);
  env_.files().Append("/logs/c.log", Line(4));
  Settle();
  EXPECT_TRUE(EachOnce(1, 3)) << "not before its next turn";
  env_.Advance(milliseconds(1000));
  tails_->Sweep(env_.SteadyNow());
  EXPECT_TRUE(EachOnce(1, 4));
  // One is deleted and finished: its descriptor goes to the file that waited, followed from
  // where its turns left it.
  env_.files().Remove("/logs/a.log");
  Settle();
  SweepLater();
  SweepLater();
  Settle();
  EXPECT_EQ(closed_, std::vector<std::string>{"/logs/a.log"});
  EXPECT_TRUE(tails_->unwatched().empty());
  EXPECT_EQ(tails_->in_turn(), 0u);
  EXPECT_EQ(budget_->used(), 2u);
  env_.files().Append("/logs/c.log", Line(5));
  Settle();
  EXPECT_TRUE(EachOnce(1, 5)) << "followed now: read as it is written";
}

// A file read in turn and renamed (logrotate's rename) is one file with one detection state:
// when a descriptor frees, it is followed under its new name from where its turns left it,
// never opened a second time beside its turns.
TEST_F(TailSetTest, AFileReadInTurnAndRenamedIsFollowedOnceUnderItsNewName) {
  budget_ = std::make_shared<DescriptorBudget>(2);
  Start({"/logs/*.log*"});
  env_.files().Append("/logs/a.log", Line(1));
  env_.files().Append("/logs/b.log", Line(2));
  env_.files().Append("/logs/c.log", Line(3));
  Settle();
  ASSERT_EQ(tails_->in_turn(), 1u);
  env_.Advance(milliseconds(1000));
  tails_->Sweep(env_.SteadyNow());
  ASSERT_TRUE(EachOnce(1, 3));
  env_.files().Rename("/logs/c.log", "/logs/c.log.1");
  env_.files().Append("/logs/c.log.1", Line(4));
  env_.files().Append("/logs/c.log", Line(5));  // a new file under the old name
  env_.files().Remove("/logs/a.log");           // a descriptor frees
  for (int i = 0; i < 4; ++i) {
    Settle();
    SweepLater();
  }
  env_.Advance(milliseconds(3000));
  tails_->Sweep(env_.SteadyNow());
  Settle();
  EXPECT_TRUE(EachOnce(1, 5));
  std::vector<SavedTail> saved;
  tails_->SaveTo(saved);  // every position is known (durable() of a closed stream would throw)
}

// Item 10: a crash line in any of many files past the budget is read within
// ceil(N / kTurnsPerSecond) seconds, every line once, and their positions are saved.
TEST_F(TailSetTest, ManyFilesPastTheBudgetAreEachReadWithinTheStatedDelay) {
  budget_ = std::make_shared<DescriptorBudget>(2);
  Start({"/logs/*.log"});
  const int files = static_cast<int>(2 + 2 * TailSet::kTurnsPerSecond);  // two seconds' worth
  for (int n = 0; n < files; ++n) {
    char name[32];
    std::snprintf(name, sizeof name, "/logs/r%03d.log", n);
    env_.files().Append(name, Line(n));
  }
  Settle();
  EXPECT_EQ(tails_->in_turn(), static_cast<std::size_t>(files - 2));
  for (int second = 0; second < 2; ++second) {
    env_.Advance(milliseconds(1000));
    tails_->Sweep(env_.SteadyNow());
  }
  EXPECT_TRUE(EachOnce(0, files - 1));
  std::vector<SavedTail> saved;
  tails_->SaveTo(saved);
  EXPECT_EQ(saved.size(), static_cast<std::size_t>(files));
  for (const SavedTail& each : saved) {
    EXPECT_EQ(each.position.offset, Line(0).size()) << each.path;
  }
  EXPECT_EQ(budget_->used(), 2u);
}

TEST_F(TailSetTest, AFileThatCannotBeOpenedIsListedWithWhyAndTriedAgain) {
  Start({"/logs/*.log"});
  env_.files().FailOpens("/logs/b.log", EMFILE);
  env_.files().Append("/logs/a.log", Line(1));
  env_.files().Append("/logs/b.log", Line(2));
  Settle();
  ASSERT_EQ(tails_->unwatched().size(), 1u);
  EXPECT_NE(tails_->unwatched().at("/logs/b.log").find("Too many open files"), std::string::npos)
      << tails_->unwatched().at("/logs/b.log");
  env_.files().FailOpens("/logs/b.log", 0);
  env_.files().Append("/logs/b.log", Line(3));  // its write brings a rescan
  Settle();
  EXPECT_TRUE(tails_->unwatched().empty());
  EXPECT_TRUE(EachOnce(1, 3));
}

TEST_F(TailSetTest, ADeletedFileIsClosedOnceReadAndQuietNotAfterTheRenameGrace) {
  Start({"/logs/*.log"});
  auto writer = env_.files().OpenForWriting("/logs/a.log");
  env_.files().AppendHeld(writer, Lines(1, 2));
  Settle();
  env_.files().Remove("/logs/a.log");
  Settle();
  env_.files().AppendHeld(writer, Line(3));  // its writer's last words, after the unlink
  env_.Advance(std::chrono::seconds(1));
  tails_->Sweep(env_.SteadyNow());
  EXPECT_TRUE(closed_.empty()) << "it grew since the unlink: read, not closed";
  EXPECT_TRUE(EachOnce(1, 3));
  env_.Advance(std::chrono::seconds(1));
  tails_->Sweep(env_.SteadyNow());
  EXPECT_TRUE(closed_.empty()) << "quiet for one tick is not yet enough";
  env_.Advance(std::chrono::seconds(1));
  tails_->Sweep(env_.SteadyNow());
  EXPECT_EQ(closed_, std::vector<std::string>{"/logs/a.log"});
  EXPECT_TRUE(tails_->files().empty());
}

TEST_F(TailSetTest, ALogReachedThroughASymlinkIsReadAsItsTargetGrowsAndAfterASwap) {
  // Launchers point logs/current.log at each run's own file: the writes are reported by
  // the target's name, and after the link is swapped the old run's last words still count.
  env_.files().Append("/runs/run-1.log", Line(1));
  env_.files().Symlink("/runs/run-1.log", "/logs/current.log");
  Start({"/logs/current.log"}, {}, /*first_start=*/false);
  Settle();  // the rescan that watches the target's directory too
  EXPECT_TRUE(EachOnce(1, 1));
  EXPECT_EQ(env_.watched_dirs(), (std::set<std::string>{"/logs", "/runs"}));
  env_.files().Append("/runs/run-1.log", Line(2));
  env_.RunUntilIdle();
  EXPECT_TRUE(EachOnce(1, 2)) << "at its write, not at the next sweep";
  // ln -sfn: a new link renamed over the old one.
  env_.files().Append("/runs/run-2.log", Line(3));
  env_.files().Symlink("/runs/run-2.log", "/logs/current.log.tmp");
  env_.files().Rename("/logs/current.log.tmp", "/logs/current.log");
  Settle();
  EXPECT_TRUE(EachOnce(1, 3)) << "the new run from its start";
  env_.files().Append("/runs/run-1.log", Line(4));  // the old run, still writing
  env_.RunUntilIdle();
  EXPECT_TRUE(EachOnce(1, 4));
  env_.files().Append("/runs/run-2.log", Line(5));
  env_.RunUntilIdle();
  EXPECT_TRUE(EachOnce(1, 5));
}

TEST(DescriptorBudget, LeasesAreGivenBackWhenDestroyedOrMoved) {
  DescriptorBudget budget(2);
  DescriptorBudget::Lease a;
  DescriptorBudget::Lease b;
  DescriptorBudget::Lease c;
  EXPECT_TRUE(budget.Take(a));
  EXPECT_TRUE(budget.Take(a)) << "a lease already held is not taken twice";
  EXPECT_TRUE(budget.Take(b));
  EXPECT_TRUE(budget.exhausted());
  EXPECT_FALSE(budget.Take(c));
  {
    DescriptorBudget::Lease moved = std::move(a);
    EXPECT_EQ(budget.used(), 2u);
  }
  EXPECT_EQ(budget.used(), 1u);
  b = DescriptorBudget::Lease();
  EXPECT_EQ(budget.used(), 0u);
  // An eighth of the limit and 64 more are kept for the daemon's sockets, pipes and bundles.
  EXPECT_EQ(DescriptorBudget::ForOpenFileLimit(1024), 1024u - 64 - 128);
  EXPECT_EQ(DescriptorBudget::ForOpenFileLimit(128), 48u);
  EXPECT_EQ(DescriptorBudget::ForOpenFileLimit(64), 0u);
}

}  // namespace
}  // namespace trainwatch::source
