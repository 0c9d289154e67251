// The fakes the unit tests stand on: if they lie, every test built on them does.
#include "support/fake_env.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <array>
#include <cerrno>

namespace trainwatch::testing {
namespace {

using std::chrono::milliseconds;

std::string ReadAll(const ReadableFile& file) {
  std::string text;
  std::array<char, 7> buffer{};  // small: reads must continue at their offset
  while (true) {
    Result<std::size_t> n = file.ReadAt(text.size(), buffer);
    if (!n || *n == 0) {
      return text;
    }
    text.append(buffer.data(), *n);
  }
}

TEST(FakeEnv, TimersFireInOrderAtTheirOwnTimes) {
  FakeEnv env;
  const SteadyTime start = env.SteadyNow();
  std::vector<std::pair<std::string, milliseconds>> fired;
  auto at = [&](const std::string& name) {
    fired.emplace_back(name, std::chrono::duration_cast<milliseconds>(env.SteadyNow() - start));
  };
  auto late = env.NewTimer([&] { at("late"); });
  auto early = env.NewTimer([&] { at("early"); });
  auto every = env.NewTimer([&] { at("every"); });
  late->Start(milliseconds(250), {});
  early->Start(milliseconds(100), {});
  every->Start(milliseconds(120), milliseconds(120));
  env.Advance(milliseconds(99));
  EXPECT_TRUE(fired.empty());
  env.Advance(milliseconds(200));
  EXPECT_EQ(fired,
            (std::vector<std::pair<std::string, milliseconds>>{{"early", milliseconds(100)},
                                                               {"every", milliseconds(120)},
                                                               {"every", milliseconds(240)},
                                                               {"late", milliseconds(250)}}));
  EXPECT_EQ(env.SteadyNow() - start, milliseconds(299));
  EXPECT_FALSE(late->active());
  EXPECT_TRUE(every->active());
  every.reset();  // a destroyed timer never fires
  env.Advance(milliseconds(1000));
  EXPECT_EQ(fired.size(), 4u);
}

TEST(FakeEnv, WallClockMovesWithTheSteadyOne) {
  FakeEnv env;
  const WallTime wall = env.WallNow();
  env.Advance(milliseconds(1500));
  EXPECT_EQ(env.WallNow() - wall, milliseconds(1500));
}

TEST(FakeEnv, ATimerMayStopOrDestroyItselfWhileFiring) {
  FakeEnv env;
  int fired = 0;
  std::unique_ptr<LoopTimer> timer;
  timer = env.NewTimer([&] {
    ++fired;
    timer.reset();
  });
  timer->Start(milliseconds(10), milliseconds(10));
  env.Advance(milliseconds(100));
  EXPECT_EQ(fired, 1);
}

TEST(FakeEnv, IdleWorkRunsEachTurnUntilStopped) {
  FakeEnv env;
  int turns = 0;
  std::unique_ptr<LoopIdle> idle;
  idle = env.NewIdle([&] {
    if (++turns == 3) {
      idle->Stop();
    }
  });
  idle->Start();
  EXPECT_EQ(turns, 0);  // only when the loop runs
  env.RunUntilIdle();
  EXPECT_EQ(turns, 3);
}

TEST(FakeEnv, ALoopThatNeverRunsOutOfWorkIsAnError) {
  FakeEnv env;
  auto idle = env.NewIdle([] {});
  idle->Start();
  EXPECT_THROW(env.RunUntilIdle(), std::logic_error);
}

TEST(FakeEnv, PoolWorkRunsOnTheLoopOrWaitsWhileHeld) {
  FakeEnv env;
  std::vector<std::string> order;
  env.HoldPool();
  env.RunOnPool([&] { order.push_back("work"); }, [&] { order.push_back("done"); });
  env.RunUntilIdle();
  EXPECT_TRUE(order.empty());
  EXPECT_EQ(env.pool_waiting(), 1u);
  env.ReleasePool();
  EXPECT_EQ(order, (std::vector<std::string>{"work", "done"}));
}

TEST(FakeFileSystem, AnOpenFileReadsOnAfterRenameAndDelete) {
  FakeEnv env;
  FakeFileSystem& files = env.files();
  files.Append("/logs/train.log", "first line\n");
  Result<std::unique_ptr<ReadableFile>> open = env.fs().OpenForReading("/logs/train.log");
  ASSERT_TRUE(open.ok());
  const std::uint64_t inode = files.InodeOf("/logs/train.log");
  files.Rename("/logs/train.log", "/logs/train.log.1");
  files.Append("/logs/train.log.1", "second line\n");
  EXPECT_EQ(ReadAll(**open), "first line\nsecond line\n");
  EXPECT_EQ(files.InodeOf("/logs/train.log.1"), inode);
  EXPECT_FALSE(env.fs().Stat("/logs/train.log").ok());
  files.Remove("/logs/train.log.1");
  Result<FileStatus> status = (*open)->Status();
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->links, 0u);
  EXPECT_EQ(status->size, 23u);
  EXPECT_EQ(ReadAll(**open), "first line\nsecond line\n");
}

TEST(FakeFileSystem, TruncateCopyAndInodeReuse) {
  FakeFileSystem files;
  files.Append("/logs/a.log", "0123456789");
  files.Copy("/logs/a.log", "/logs/a.log.1", 4);
  EXPECT_NE(files.InodeOf("/logs/a.log.1"), files.InodeOf("/logs/a.log"));
  files.Truncate("/logs/a.log");
  EXPECT_EQ(files.Stat("/logs/a.log")->size, 0u);
  EXPECT_EQ(files.Stat("/logs/a.log.1")->size, 4u);
  const std::uint64_t inode = files.InodeOf("/logs/a.log");
  files.Remove("/logs/a.log");
  files.Append("/logs/b.log", "other", inode);
  EXPECT_EQ(files.InodeOf("/logs/b.log"), inode);
}

TEST(FakeFileSystem, OpensFailAsToldUntilToldOtherwise) {
  FakeFileSystem files;
  files.Append("/logs/a.log", "x\n");
  files.FailOpens("/logs/a.log", EMFILE);
  const Result<std::unique_ptr<ReadableFile>> refused = files.OpenForReading("/logs/a.log");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, "/logs/a.log: Too many open files");
  EXPECT_TRUE(files.Stat("/logs/a.log").ok()) << "it is there; only opening fails";
  files.FailOpens("/logs/a.log", 0);
  EXPECT_TRUE(files.OpenForReading("/logs/a.log").ok());
}

TEST(FakeFileSystem, SymlinksLeadToTheirTargetsWhoseNameTheWatchesHear) {
  FakeEnv env;
  FakeFileSystem& files = env.files();
  files.Append("/logs/run-1.log", "a\n");
  files.Symlink("run-1.log", "/logs/current.log");
  EXPECT_EQ(files.Stat("/logs/current.log")->inode, files.InodeOf("/logs/run-1.log"));
  EXPECT_EQ(files.Stat("/logs/current.log", /*follow=*/false)->type, FileType::kSymlink);
  EXPECT_EQ(*files.ResolvePath("/logs/current.log"), "/logs/run-1.log");
  env.RunUntilIdle();  // what came before the watch is not its to hear
  std::vector<std::pair<std::string, Env::DirEvent>> heard;
  auto watch = env.WatchDirectory("/logs", [&](std::string_view name, Env::DirEvent event) {
    heard.emplace_back(name, event);
  });
  ASSERT_TRUE(watch.ok());
  files.Append("/logs/current.log", "b\n");  // a writer that opened the link
  env.RunUntilIdle();
  EXPECT_EQ(
      heard,
      (std::vector<std::pair<std::string, Env::DirEvent>>{{"run-1.log", Env::DirEvent::kWrite}}));
  EXPECT_EQ(files.Stat("/logs/run-1.log")->size, 4u);
  files.Symlink("/elsewhere/run-2.log", "/logs/next.log");
  EXPECT_FALSE(files.ResolvePath("/logs/next.log").ok()) << "a dangling link";
}

TEST(FakeFileSystem, ListsEntriesWithTheirTypes) {
  FakeFileSystem files;
  files.Append("/runs/job1/rank0.log", "x");
  files.MakeDirs("/runs/job2");
  Result<std::vector<DirEntry>> listed = files.List("/runs");
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].name, "job1");
  EXPECT_EQ((*listed)[0].type, FileType::kDirectory);
  EXPECT_EQ(files.List("/runs/job1")->at(0).type, FileType::kRegular);
  EXPECT_FALSE(files.List("/missing").ok());
  EXPECT_FALSE(files.List("/runs/job1/rank0.log").ok());
  files.SetKind("/runs", FileSystemKind::kNetwork);
  EXPECT_EQ(*files.KindOf("/runs/job1"), FileSystemKind::kNetwork);
  EXPECT_EQ(*files.KindOf("/"), FileSystemKind::kLocal);
}

TEST(FakeEnv, DirectoryWatchesHearChangesOnTheNextTurn) {
  FakeEnv env;
  env.files().MakeDirs("/logs");
  using DirEvent = Env::DirEvent;
  std::vector<std::pair<std::string, Env::DirEvent>> heard;
  Result<std::unique_ptr<ChangeWatch>> watch = env.WatchDirectory(
      "/logs",
      [&](std::string_view name, Env::DirEvent event) { heard.emplace_back(name, event); });
  ASSERT_TRUE(watch.ok());
  EXPECT_FALSE(env.WatchDirectory("/nowhere", [](std::string_view, DirEvent) {}).ok());
  env.files().Append("/logs/train.log", "a\n");  // created, then written
  env.files().Append("/elsewhere/x.log", "b\n");
  env.CloseWrite("/logs/train.log");  // its writer closed it
  EXPECT_TRUE(heard.empty());
  env.RunUntilIdle();
  EXPECT_EQ(heard,
            (std::vector<std::pair<std::string, DirEvent>>{{"train.log", DirEvent::kRename},
                                                           {"train.log", DirEvent::kWrite},
                                                           {"train.log", DirEvent::kCloseWrite}}));
  EXPECT_EQ(env.watched_dirs(), (std::set<std::string>{"/logs"}));
  watch->reset();
  env.files().Append("/logs/train.log", "c\n");
  env.RunUntilIdle();
  EXPECT_EQ(heard.size(), 3u) << "nothing heard once the watch is gone";
  EXPECT_TRUE(env.watched_dirs().empty());
}

TEST(FakeEnv, FilePollsReportChangesAtTheirInterval) {
  FakeEnv env;
  env.files().Append("/nfs/train.log", "a\n");
  std::vector<bool> heard;
  Result<std::unique_ptr<ChangeWatch>> poll =
      env.PollFile("/nfs/train.log", milliseconds(500), [&](bool gone) { heard.push_back(gone); });
  ASSERT_TRUE(poll.ok());
  env.files().Append("/nfs/train.log", "b\n");
  env.Advance(milliseconds(499));
  EXPECT_TRUE(heard.empty());
  env.Advance(milliseconds(1));
  EXPECT_EQ(heard, std::vector<bool>{false});
  env.Advance(milliseconds(500));  // nothing changed
  EXPECT_EQ(heard.size(), 1u);
  env.files().Remove("/nfs/train.log");
  env.Advance(milliseconds(500));
  EXPECT_EQ(heard, (std::vector<bool>{false, true}));
}

TEST(FakeEnv, ChildrenAreScripted) {
  FakeEnv env;
  env.not_installed.insert("py-spy");
  EXPECT_EQ(env.Spawn({{"py-spy", "dump"}, {}, {}}, {}).error().message, Env::kNotInstalled);

  std::string out;
  std::vector<std::string> events;
  ChildEvents handlers;
  handlers.on_output = [&](bool is_stderr, std::string_view text) {
    out += (is_stderr ? "E:" : "O:") + std::string(text);
  };
  handlers.on_output_end = [&](bool) { events.push_back("end"); };
  handlers.on_exit = [&](std::int64_t status, int signal) {
    events.push_back("exit " + std::to_string(status) + " " + std::to_string(signal));
  };
  Result<std::unique_ptr<ChildProcess>> child =
      env.Spawn({{"hl-smi", "-q"}, {"A=1"}, {}}, handlers);
  ASSERT_TRUE(child.ok());
  FakeEnv::Child& script = *env.children().back();
  EXPECT_EQ(script.options.extra_env, std::vector<std::string>{"A=1"});
  EXPECT_EQ((*child)->pid(), script.pid);
  env.Output(script, "ok\n");
  env.Output(script, "warn\n", /*is_stderr=*/true);
  EXPECT_TRUE(env.ProcessExists(script.pid));
  env.Signal(-script.pid, SIGTERM);  // to its group
  EXPECT_TRUE(events.empty());       // the death is told on the next turn
  env.RunUntilIdle();
  EXPECT_EQ(out, "O:ok\nE:warn\n");
  EXPECT_EQ(events, (std::vector<std::string>{"end", "end", "exit 0 15"}));
  EXPECT_EQ(script.signals, std::vector<int>{SIGTERM});
  EXPECT_FALSE(env.ProcessExists(script.pid));
}

TEST(FakeEnv, AChildInUninterruptibleSleepIgnoresSignals) {
  FakeEnv env;
  env.signals_kill = false;
  bool exited = false;
  ChildEvents handlers{[](bool, std::string_view) {}, [](bool) {},
                       [&](std::int64_t, int) { exited = true; }};
  Result<std::unique_ptr<ChildProcess>> child = env.Spawn({{"hl-smi"}, {}, {}}, handlers);
  ASSERT_TRUE(child.ok());
  env.Signal(-(*child)->pid(), SIGKILL);
  env.RunUntilIdle();
  EXPECT_FALSE(exited);
  EXPECT_TRUE(env.ProcessExists((*child)->pid()));
  child->reset();  // no longer listened to: its end reaches no one
  env.Exit(*env.children().back(), 0, SIGKILL);
  EXPECT_FALSE(exited);
}

}  // namespace
}  // namespace trainwatch::testing
