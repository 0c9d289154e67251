// WatchedSource on a FakeEnv: a writer that vanishes mid-bar, a stall, and the exit of a
// wrapped command, stepped through fake time with scripted processes.
#include "detect/watched_source.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <set>

#include "detect/watched_source_fixture.h"
#include "support/fake_env.h"

namespace trainwatch::detect {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeEnv;

constexpr const char* kRules = R"(rules:
  - id: t.stall
    kind: hang
    tags: [train]
    description: stall
    progress: {stall_after: 60s}
  - id: t.killed
    kind: crash
    tags: [train]
    description: killed
    exit: {signals: [SIGKILL]}
  - id: t.quiet
    kind: hang
    tags: [train]
    description: silence
    silence: {after: 90s}
  - id: t.oom
    kind: crash
    tags: [train]
    description: OOM
    pattern: 'out of memory'
    examples: {fires: [out of memory], quiet: [y]}
  - id: t.traceback
    kind: crash
    tags: [train]
    description: traceback
    pattern: 'Traceback \(most recent call last\):'
    multiline: python-traceback
    examples:
      fires: ["Traceback (most recent call last):\n  File \"t.py\", line 1, in <module>\nKeyError: 'x'\n"]
      quiet: [y]
  - id: t.ecc
    kind: device
    tags: [train]
    description: a device error the job printed
    pattern: 'uncorrectable ECC error'
    examples: {fires: [uncorrectable ECC error], quiet: [y]}
  - id: t.last
    kind: crash
    tags: [train]
    description: an exception line as its writer's last words
    pattern: '^AssertionError: '
    last_words: true
    examples: {fires: ["AssertionError: x"], quiet: [y]}
)";

std::string Bar(int count) {
  return "Epoch 0:  " + std::to_string(count * 100 / 40) + "%|####      | " +
         std::to_string(count) + "/40 [00:03<00:05,  4.6it/s]\r";
}

class WatchedSourceTest : public ::testing::Test {
 protected:
  WatchedSourceTest() : source_(TrainSource(kRules)) { env_.files().MakeDirs("/logs"); }

  // The quiet outlet, with what these tests look at recorded.
  WatchedSource::Outlet Outlet() {
    WatchedSource::Outlet outlet = QuietOutlet();
    outlet.fired = [this](std::vector<Firing>& firings, StreamDetector*) {
      for (const Firing& firing : firings) {
        fired_.push_back(firing.event.rule_id + ": " + firing.event.summary);
        kinds_.push_back(firing.event.kind);
      }
    };
    outlet.writer_closed = [this] { ++writer_closed_; };
    outlet.crash_caught = [this](StreamDetector& stream) {
      caught_.push_back(stream.crash_line());
    };
    return outlet;
  }
  void Start() {
    source_->Start(env_, Outlet(), 5, {});
    env_.RunUntilIdle();
  }
  StreamDetector& OnlyStream() { return *source_->file_streams().begin()->second; }
  // The wrapped command prints one line on stdout (0) or stderr (1).
  void WrapPrints(std::size_t stream, std::string_view line) {
    source::LineBatch batch;
    batch.text = line;
    batch.ends = {static_cast<std::uint32_t>(line.size())};
    source_->OnWrapBatch(stream, batch);
  }
  // Started, with /logs/rank0.log at a bar of 4/40 written by the live pid 4242.
  void StartWithOneWriterAtABar() {
    Start();
    env_.files().Append("/logs/rank0.log", Bar(4));
    env_.Advance(milliseconds(20));
    env_.live_pids.insert(4242);
    OnlyStream().set_writers({source::WriterProcess{4242, "python3"}});
  }

  FakeEnv env_;
  std::unique_ptr<WatchedSource> source_;
  // The one file's id, for a writer scan that found no process holding it.
  std::set<source::FileId> OnlyFile() { return {source_->file_streams().begin()->first}; }

  std::vector<std::string> fired_;
  std::vector<rules::RuleKind> kinds_;
  int writer_closed_ = 0;
  std::vector<std::uint64_t> caught_;  // crash lines of streams that went on
};

TEST_F(WatchedSourceTest, AWriterThatVanishesMidBarIsACrash) {
  Start();
  env_.files().Append("/logs/rank0.log", Bar(4));
  env_.Advance(milliseconds(20));  // the rescan a new name sets off
  ASSERT_EQ(source_->file_streams().size(), 1u);
  env_.live_pids.insert(4242);
  OnlyStream().set_writers({source::WriterProcess{4242, "python3"}});
  env_.Advance(seconds(1));
  env_.files().Append("/logs/rank0.log", Bar(15));
  env_.RunUntilIdle();
  source_->CheckWriters(env_.SteadyNow());
  EXPECT_TRUE(fired_.empty()) << "its writer lives";
  env_.live_pids.erase(4242);  // SIGKILLed: the OOM killer
  source_->CheckWriters(env_.SteadyNow());
  ASSERT_EQ(fired_.size(), 1u);
  EXPECT_NE(fired_[0].find("(python3) stopped with 'Epoch 0' at 15/40"), std::string::npos)
      << fired_[0];
  EXPECT_TRUE(OnlyStream().writers().empty());
  env_.Advance(seconds(120));
  source_->CheckTime(env_.SteadyNow());
  EXPECT_EQ(fired_.size(), 1u) << "a dead job's bar is no stall";
}

TEST_F(WatchedSourceTest, ABarThatStopsMovingIsAStallAfterItsTime) {
  Start();
  env_.files().Append("/logs/rank0.log", Bar(4));
  env_.RunUntilIdle();
  env_.Advance(seconds(1));
  env_.files().Append("/logs/rank0.log", Bar(5));
  env_.RunUntilIdle();
  env_.Advance(seconds(59));
  source_->CheckTime(env_.SteadyNow());
  EXPECT_TRUE(fired_.empty());
  env_.Advance(seconds(1));
  source_->CheckTime(env_.SteadyNow());
  ASSERT_EQ(fired_.size(), 1u);
  EXPECT_EQ(fired_[0].rfind("t.stall: ", 0), 0u) << fired_[0];
}

TEST_F(WatchedSourceTest, TheWrappedCommandsEndIsJudgedByTheExitRules) {
  ASSERT_TRUE(source_->StartWrap(env_, Outlet(), 5, 4242, "python3"));
  source_->OnWrapEnded(source::ChildEnd{0, SIGTERM}, "process 4242 (python3)");
  EXPECT_TRUE(fired_.empty()) << "SIGTERM is not among the rule's signals";
  source_->OnWrapEnded(source::ChildEnd{0, SIGKILL}, "process 4242 (python3)");
  ASSERT_EQ(fired_.size(), 1u);
  EXPECT_EQ(fired_[0].rfind("t.killed: ", 0), 0u) << fired_[0];
}

TEST_F(WatchedSourceTest, AWriterNoScanSawKilledMidBarIsOneCrashNotAHang) {
  // Killed 0.3 s after its first line: no /proc scan ever saw it; the kernel's close of the
  // log (IN_CLOSE_WRITE) and a scan finding no holder are all there is.
  Start();
  env_.files().Append("/logs/rank0.log", "starting training: 40 steps\n" + Bar(1));
  env_.Advance(milliseconds(20));
  ASSERT_EQ(source_->file_streams().size(), 1u);
  env_.Advance(milliseconds(280));
  env_.files().Append("/logs/rank0.log", Bar(2));
  env_.RunUntilIdle();
  env_.CloseWrite("/logs/rank0.log");
  env_.RunUntilIdle();
  EXPECT_EQ(writer_closed_, 1) << "a scan is asked for at once";
  source_->WritersNotFound(OnlyFile(), env_.SteadyNow());
  ASSERT_EQ(fired_.size(), 1u);
  EXPECT_EQ(kinds_[0], rules::RuleKind::kCrash);
  EXPECT_NE(fired_[0].find("writer exited: the log's last writer (closed it; no process holds "
                           "it) stopped with 'Epoch 0' at 2/40 mid-line"),
            std::string::npos)
      << fired_[0];
  env_.Advance(seconds(120));  // past the stall (60 s) and the silence (90 s)
  source_->CheckTime(env_.SteadyNow());
  EXPECT_EQ(fired_.size(), 1u) << "a dead writer's bar neither stalls nor falls silent";
}

TEST_F(WatchedSourceTest, AWriterThatClosesTheLogButWritesAgainIsNotGone) {
  Start();
  env_.files().Append("/logs/rank0.log", Bar(1));
  env_.Advance(milliseconds(20));
  env_.CloseWrite("/logs/rank0.log");  // a logger that opens and closes per write
  env_.RunUntilIdle();
  env_.files().Append("/logs/rank0.log", Bar(2));
  env_.RunUntilIdle();
  source_->WritersNotFound(OnlyFile(), env_.SteadyNow());
  EXPECT_TRUE(fired_.empty());
  EXPECT_FALSE(OnlyStream().progress().ended());
}

// tqdm's close ends the bar's line: a bar with no total, or a loop stopped early, is done. Its
// writer's exit 0 is unknowable (not our child); the ended line is what tells.
TEST_F(WatchedSourceTest, AJobThatEndsItsBarLineEndedNormallyWhateverTheBarShows) {
  Start();
  env_.files().Append("/logs/a.log", "starting\n");
  env_.files().Append("/logs/b.log", "starting\n");
  env_.Advance(milliseconds(20));
  ASSERT_EQ(source_->file_streams().size(), 2u);
  int pid = 4242;
  for (auto& [id, stream] : source_->file_streams()) {
    env_.live_pids.insert(pid);
    stream->set_writers({source::WriterProcess{pid++, "python3"}});
  }
  env_.files().Append("/logs/a.log", "processing: 28it [00:01, 28.50it/s]\r");
  env_.files().Append("/logs/b.log", "Epoch 0:   0%|    | 124/100000 [00:02<30:00, 55it/s]\r");
  env_.RunUntilIdle();
  env_.Advance(milliseconds(100));
  env_.files().Append("/logs/a.log", "processing: 29it [00:01, 28.50it/s]\n");
  env_.files().Append("/logs/b.log", "Epoch 0:   0%|    | 125/100000 [00:02<30:00, 55it/s]\n");
  env_.RunUntilIdle();
  env_.live_pids.clear();  // both exit
  source_->CheckWriters(env_.SteadyNow());
  EXPECT_TRUE(fired_.empty()) << fired_.front();
  env_.Advance(seconds(120));
  source_->CheckTime(env_.SteadyNow());
  EXPECT_TRUE(fired_.empty()) << "no stall, no silence either: " << fired_.front();
}

TEST_F(WatchedSourceTest, AWriterTheKernelLogSaysWasOomKilledIsACrashWhateverTheLogShows) {
  WatchedSource::Outlet outlet = Outlet();
  outlet.oom_evidence = [](int pid) {
    return pid == 4242 ? std::string("Out of memory: Killed process 4242 (python3)")
                       : std::string();
  };
  source_->Start(env_, outlet, 5, {});
  env_.RunUntilIdle();
  env_.files().Append("/logs/rank0.log", "step 41/100 loss 0.25\n");  // whole lines: no mid-bar
  env_.Advance(milliseconds(20));
  env_.live_pids.insert(4242);
  OnlyStream().set_writers({source::WriterProcess{4242, "python3"}});
  env_.live_pids.erase(4242);
  source_->CheckWriters(env_.SteadyNow());
  ASSERT_EQ(fired_.size(), 1u);
  EXPECT_EQ(kinds_[0], rules::RuleKind::kCrash);
  EXPECT_EQ(fired_[0],
            "writer.exited: writer killed by the kernel's OOM killer: 4242 (python3) stopped "
            "with 'step' at 41/100")
      << fired_[0];
}

TEST_F(WatchedSourceTest, TheWrappedCommandsExitAfterItsCrashIsThatCrashsEnd) {
  ASSERT_TRUE(source_->StartWrap(env_, Outlet(), 5, 4242, "python3"));
  WrapPrints(1, "CUDA out of memory");
  ASSERT_EQ(fired_.size(), 1u);
  env_.Advance(seconds(3));  // a slow teardown: the crash's incident may be written by now
  source_->OnWrapEnded(source::ChildEnd{0, SIGKILL}, "process 4242 (python3)");
  ASSERT_EQ(fired_.size(), 2u);
  EXPECT_EQ(fired_[1].rfind("t.killed: ", 0), 0u) << fired_[1];
  EXPECT_EQ(kinds_[1], rules::RuleKind::kWarning) << "one failure, one incident";
}

// `wrap --exit-codes verdict` gave the exit rule's verdict (91) for a command that printed an
// uncorrectable ECC error and exited, when the device incident was written before the exit:
// the exit opened an incident of its own.
TEST_F(WatchedSourceTest, TheWrappedCommandsExitAfterItsDeviceErrorIsThatErrorsEnd) {
  ASSERT_TRUE(source_->StartWrap(env_, Outlet(), 5, 4242, "python3"));
  WrapPrints(1, "RuntimeError: CUDA error: uncorrectable ECC error encountered");
  ASSERT_EQ(fired_.size(), 1u);
  EXPECT_EQ(kinds_[0], rules::RuleKind::kDevice);
  env_.Advance(seconds(3));
  source_->OnWrapEnded(source::ChildEnd{0, SIGKILL}, "process 4242 (python3)");
  ASSERT_EQ(fired_.size(), 2u);
  EXPECT_EQ(kinds_[1], rules::RuleKind::kWarning) << "one failure, one incident";
  EXPECT_NE(fired_[1].find("after the device error already reported"), std::string::npos)
      << fired_[1];
}

// A device error on stderr while the bar moves on in stdout: the job survived it, and its exit
// is its own.
TEST_F(WatchedSourceTest, TheWrappedCommandsExitAfterADeviceErrorItsBarMovedOnFromIsItsOwn) {
  ASSERT_TRUE(source_->StartWrap(env_, Outlet(), 5, 4242, "python3"));
  WrapPrints(1, "RuntimeError: CUDA error: uncorrectable ECC error encountered");
  ASSERT_EQ(fired_.size(), 1u);
  env_.Advance(seconds(5));
  for (const int count : {5, 6}) {
    const std::string bar = Bar(count);
    WrapPrints(0, std::string_view(bar).substr(0, bar.size() - 1));  // a refresh, as a line
    env_.Advance(seconds(1));
  }
  source_->OnWrapEnded(source::ChildEnd{0, SIGKILL}, "process 4242 (python3)");
  ASSERT_EQ(fired_.size(), 2u) << ::testing::PrintToString(fired_);
  EXPECT_EQ(kinds_[1], rules::RuleKind::kCrash) << fired_[1];
}

// A crash the job caught (its bar moved on), then a device error it died of: the death is the
// device error's end (catching the crash forgets the crash, not the device error).
TEST_F(WatchedSourceTest, AWritersDeathAfterACaughtCrashThenADeviceErrorIsThatErrorsEnd) {
  StartWithOneWriterAtABar();
  env_.files().Append("/logs/rank0.log", "\nCUDA out of memory\n" + Bar(5));
  env_.RunUntilIdle();
  env_.Advance(seconds(1));
  env_.files().Append("/logs/rank0.log", Bar(6) + "\nuncorrectable ECC error\n" + Bar(6));
  env_.RunUntilIdle();
  ASSERT_EQ(kinds_.size(), 2u) << ::testing::PrintToString(fired_);
  EXPECT_EQ(kinds_[1], rules::RuleKind::kDevice);
  EXPECT_EQ(caught_.size(), 1u) << "the OOM was caught";
  env_.live_pids.erase(4242);
  source_->CheckWriters(env_.SteadyNow());
  ASSERT_EQ(fired_.size(), 3u) << ::testing::PrintToString(fired_);
  EXPECT_EQ(kinds_[2], rules::RuleKind::kWarning) << fired_[2];
  EXPECT_NE(fired_[2].find("after the device error already reported"), std::string::npos)
      << fired_[2];
}

// A device error the job went on after (its bar moved past it) is not what its death, later,
// is the end of.
TEST_F(WatchedSourceTest, AWritersDeathLongAfterADeviceErrorItWentOnFromIsItsOwn) {
  StartWithOneWriterAtABar();
  env_.files().Append("/logs/rank0.log", "\nuncorrectable ECC error\n" + Bar(4));  // a redraw
  env_.RunUntilIdle();
  ASSERT_EQ(fired_.size(), 1u);
  EXPECT_EQ(kinds_[0], rules::RuleKind::kDevice);
  OnlyStream().set_writers({source::WriterProcess{4242, "python3"}});
  env_.live_pids.erase(4242);
  source_->CheckWriters(env_.SteadyNow());
  ASSERT_EQ(fired_.size(), 2u) << "died at the error, the bar never moved: the same failure";
  EXPECT_EQ(kinds_[1], rules::RuleKind::kWarning) << fired_[1];

  fired_.clear();
  kinds_.clear();
  env_.live_pids.insert(4243);
  OnlyStream().set_writers({source::WriterProcess{4243, "python3"}});
  env_.files().Append("/logs/rank0.log", "\nuncorrectable ECC error\n" + Bar(5));
  env_.RunUntilIdle();
  env_.Advance(seconds(1));
  env_.files().Append("/logs/rank0.log", Bar(9));  // it went on
  env_.RunUntilIdle();
  ASSERT_EQ(fired_.size(), 1u) << ::testing::PrintToString(fired_);
  env_.live_pids.erase(4243);
  source_->CheckWriters(env_.SteadyNow());
  ASSERT_EQ(fired_.size(), 2u) << ::testing::PrintToString(fired_);
  EXPECT_EQ(kinds_[1], rules::RuleKind::kCrash) << fired_[1];
}

TEST_F(WatchedSourceTest, TheSilenceAfterAStallIsTheSameHang) {
  Start();
  env_.files().Append("/logs/rank0.log", Bar(4));
  env_.RunUntilIdle();
  env_.Advance(seconds(1));
  env_.files().Append("/logs/rank0.log", Bar(5));
  env_.RunUntilIdle();
  env_.Advance(seconds(60));
  source_->CheckTime(env_.SteadyNow());
  ASSERT_EQ(fired_.size(), 1u);
  EXPECT_EQ(kinds_[0], rules::RuleKind::kHang);
  env_.Advance(seconds(30));
  source_->CheckTime(env_.SteadyNow());
  ASSERT_EQ(fired_.size(), 2u);
  EXPECT_EQ(fired_[1].rfind("t.quiet: ", 0), 0u) << fired_[1];
  // A warning: it joins the stall's incident if open, and opens none of its own.
  EXPECT_EQ(kinds_[1], rules::RuleKind::kWarning);
  EXPECT_NE(fired_[1].find("after the hang already reported"), std::string::npos) << fired_[1];
  // A line ends the hang: the next silence is a new one.
  env_.files().Append("/logs/rank0.log", "\nresumed\n");
  env_.RunUntilIdle();
  env_.Advance(seconds(90));
  source_->CheckTime(env_.SteadyNow());
  ASSERT_EQ(fired_.size(), 3u) << ::testing::PrintToString(fired_);
  EXPECT_EQ(kinds_[2], rules::RuleKind::kHang) << fired_[2];
}

TEST_F(WatchedSourceTest, AWritersDeathAfterItsCrashIsThatCrashsEnd) {
  StartWithOneWriterAtABar();
  env_.files().Append("/logs/rank0.log", "\nCUDA out of memory\n" + Bar(4));  // a redraw
  env_.RunUntilIdle();
  ASSERT_EQ(fired_.size(), 1u);
  EXPECT_EQ(kinds_[0], rules::RuleKind::kCrash);
  env_.live_pids.erase(4242);
  source_->CheckWriters(env_.SteadyNow());
  ASSERT_EQ(fired_.size(), 2u);
  EXPECT_EQ(fired_[1].rfind("writer.exited: ", 0), 0u) << fired_[1];
  EXPECT_EQ(kinds_[1], rules::RuleKind::kWarning) << "one failure, one incident";
  EXPECT_TRUE(caught_.empty()) << "the bar never moved on";
}

TEST_F(WatchedSourceTest, ATracebackTheWriterWentOnFromIsCaught) {
  StartWithOneWriterAtABar();
  env_.files().Append("/logs/rank0.log",
                      "\nTraceback (most recent call last):\n  File \"train.py\", line 3, in "
                      "step\nValueError: bad batch\n");
  env_.RunUntilIdle();
  env_.Advance(seconds(1));
  source_->CloseQuietTracebacks(env_.SteadyNow(), milliseconds(300), seconds(3));
  ASSERT_EQ(fired_.size(), 1u);
  EXPECT_EQ(fired_[0], "t.traceback: ValueError: bad batch");
  EXPECT_TRUE(caught_.empty());
  env_.files().Append("/logs/rank0.log", Bar(4));  // a redraw is no progress
  env_.RunUntilIdle();
  EXPECT_TRUE(caught_.empty());
  env_.files().Append("/logs/rank0.log", Bar(5));  // the loop went on
  env_.RunUntilIdle();
  EXPECT_EQ(caught_, std::vector<std::uint64_t>{4});
  EXPECT_EQ(OnlyStream().crash_line(), 0u) << "told once";
}

// Python reads each frame's source as it prints it: on a loaded machine the exception line
// may come well after the frames. The traceback waits for it, and closes at once when its
// writer dies without printing it.
TEST_F(WatchedSourceTest, ATracebackWaitsForItsExceptionLineUntilItsWriterDies) {
  StartWithOneWriterAtABar();
  env_.files().Append("/logs/rank0.log",
                      "\nTraceback (most recent call last):\n  File \"train.py\", line 3, in "
                      "step\n");
  env_.RunUntilIdle();
  env_.Advance(seconds(1));
  EXPECT_TRUE(source_->CloseQuietTracebacks(env_.SteadyNow(), milliseconds(300), seconds(3)));
  EXPECT_TRUE(fired_.empty()) << "a second without the exception line is a slow printer";
  env_.files().Append("/logs/rank0.log", "    loss = model(batch)\nValueError: bad batch\n");
  env_.RunUntilIdle();
  env_.Advance(seconds(1));
  EXPECT_FALSE(source_->CloseQuietTracebacks(env_.SteadyNow(), milliseconds(300), seconds(3)));
  ASSERT_EQ(fired_.size(), 1u);
  EXPECT_EQ(fired_[0], "t.traceback: ValueError: bad batch");

  // A second traceback, cut short: its writer is killed while printing it.
  env_.files().Append("/logs/rank0.log",
                      "Traceback (most recent call last):\n  File \"train.py\", line 9, in "
                      "step\n");
  env_.RunUntilIdle();
  env_.Advance(seconds(1));
  EXPECT_TRUE(source_->CloseQuietTracebacks(env_.SteadyNow(), milliseconds(300), seconds(3)));
  ASSERT_EQ(fired_.size(), 1u);
  env_.live_pids.erase(4242);
  source_->CheckWriters(env_.SteadyNow());
  ASSERT_EQ(fired_.size(), 2u) << ::testing::PrintToString(fired_);
  EXPECT_EQ(fired_[1], "t.traceback: (no exception line followed)");
  EXPECT_EQ(kinds_[1], rules::RuleKind::kCrash);
}

// An exception line its writer printed last is the crash it died of, unless the kernel said it
// exited with status 0: then it survived what it printed.
TEST_F(WatchedSourceTest, AnExceptionLineItsWriterExitedZeroAfterIsNoCrash) {
  std::map<int, int> statuses;  // wait statuses the kernel's process events told
  WatchedSource::Outlet outlet = Outlet();
  outlet.wait_status = [&statuses](int pid) -> std::optional<int> {
    auto found = statuses.find(pid);
    return found == statuses.end() ? std::nullopt : std::optional<int>(found->second);
  };
  source_->Start(env_, std::move(outlet), 5, {});
  env_.RunUntilIdle();
  env_.files().Append("/logs/rank0.log", "step 1\n");
  env_.Advance(milliseconds(20));
  env_.live_pids.insert(4242);
  OnlyStream().set_writers({source::WriterProcess{4242, "python3"}});
  env_.files().Append("/logs/rank0.log", "AssertionError: batch size 30 != 32\n");
  env_.RunUntilIdle();
  EXPECT_TRUE(fired_.empty()) << "not yet its last words";
  statuses[4242] = 0;  // exit(0)
  env_.live_pids.erase(4242);
  source_->CheckWriters(env_.SteadyNow());
  EXPECT_TRUE(fired_.empty()) << ::testing::PrintToString(fired_);

  // The next run prints the same line and exits 1: that is its crash.
  env_.live_pids.insert(4343);
  OnlyStream().set_writers({source::WriterProcess{4343, "python3"}});
  env_.files().Append("/logs/rank0.log", "AssertionError: batch size 30 != 32\n");
  env_.RunUntilIdle();
  statuses[4343] = 1 << 8;  // exit(1)
  env_.live_pids.erase(4343);
  source_->CheckWriters(env_.SteadyNow());
  ASSERT_EQ(fired_.size(), 1u) << ::testing::PrintToString(fired_);
  EXPECT_EQ(fired_[0].rfind("t.last: ", 0), 0u) << fired_[0];
}

// torchrun's combined output: rank 3 dies, ranks 0-2 print their steps until the collective
// watchdog stops them. Their progress is not rank 3 catching its exception.
TEST_F(WatchedSourceTest, OtherRanksGoingOnAfterOneRankDiesIsNoCatch) {
  Start();
  env_.files().Append("/logs/rank0.log", "[rank0]: step 4/100\n[rank3]: step 4/100\n");
  env_.Advance(milliseconds(20));
  env_.live_pids.insert(4242);
  OnlyStream().set_writers({source::WriterProcess{4242, "python3"}});
  env_.files().Append("/logs/rank0.log",
                      "[rank3]: Traceback (most recent call last):\n[rank3]:   File "
                      "\"train.py\", line 3, in step\n[rank3]: ValueError: bad batch\n");
  env_.RunUntilIdle();
  env_.Advance(seconds(1));
  source_->CloseQuietTracebacks(env_.SteadyNow(), milliseconds(300), seconds(3));
  ASSERT_EQ(fired_.size(), 1u);
  env_.files().Append("/logs/rank0.log", "[rank0]: step 5/100\n[rank0]: step 6/100\n");
  env_.RunUntilIdle();
  EXPECT_TRUE(caught_.empty());
}

// Nor is a bar moving on in a log whose writer is not known to be one process.
TEST_F(WatchedSourceTest, ABarMovingOnInALogOfUnknownWritersIsNoCatch) {
  Start();
  env_.files().Append("/logs/rank0.log", Bar(4));
  env_.Advance(milliseconds(20));
  env_.files().Append("/logs/rank0.log",
                      "\nTraceback (most recent call last):\n  File \"train.py\", line 3, in "
                      "step\nValueError: bad batch\n");
  env_.RunUntilIdle();
  env_.Advance(seconds(1));
  source_->CloseQuietTracebacks(env_.SteadyNow(), milliseconds(300), seconds(3));
  ASSERT_EQ(fired_.size(), 1u);
  env_.files().Append("/logs/rank0.log", Bar(5));
  env_.RunUntilIdle();
  EXPECT_TRUE(caught_.empty());
}

}  // namespace
}  // namespace trainwatch::detect
