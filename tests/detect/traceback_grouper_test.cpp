#include "detect/traceback_grouper.h"

#include <gtest/gtest.h>

#include "detect/detector_fixture.h"

namespace trainwatch::detect {
namespace {

struct Expected {
  std::uint64_t line;
  rules::RuleKind kind;
  std::string summary;
};

// Every case holds under the header-only rule and under the shipped shape, whose pattern
// also matches frames and fatal exception lines: a traceback with its header groups the same.
void ExpectTracebacks(const std::string& log, const std::vector<Expected>& expected) {
  for (const char* rule : {kTracebackRule, kExcerptTracebackRule}) {
    const auto events = Detect(rule, log);
    ASSERT_EQ(events.size(), expected.size()) << rule << log;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(events[i].line, expected[i].line) << i << rule;
      EXPECT_EQ(events[i].kind, expected[i].kind) << i << rule;
      EXPECT_TRUE(events[i].summary.starts_with(expected[i].summary))
          << i << ": " << events[i].summary << rule;
    }
  }
}

constexpr auto kCrash = rules::RuleKind::kCrash;
constexpr auto kWarning = rules::RuleKind::kWarning;

TEST(Traceback, PlainTracebackIsOneEventSummarisedByItsException) {
  ExpectTracebacks(
      "step 1\n"
      "Traceback (most recent call last):\n"
      "  File \"train.py\", line 10, in <module>\n"
      "    main()\n"
      "    ^^^^^^\n"
      "  [Previous line repeated 2 more times]\n"
      "RuntimeError: CUDA error: device-side assert triggered\n"
      "CUDA kernel errors might be asynchronously reported\n"
      "step 2\n",
      {{2, kCrash, "RuntimeError: CUDA error: device-side assert triggered"}});
}

TEST(Traceback, TheInnermostFrameComesWithTheEvent) {
  const auto events = Detect(kTracebackRule,
                             "[rank2]: Traceback (most recent call last):\n"
                             "[rank2]:   File \"/job/train.py\", line 10, in <module>\n"
                             "[rank2]:     main()\n"
                             "[rank2]:   File \"/job/data.py\", line 41, in collate\n"
                             "[rank2]:     batch[\"labels\"]\n"
                             "[rank2]: KeyError: 'labels'\n");
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].frame, "File \"/job/data.py\", line 41, in collate");
}

TEST(Traceback, FollowsRankPrefixesThroughInterleavedRanks) {
  ExpectTracebacks(
      "[rank1]: Traceback (most recent call last):\n"
      "[rank0]: Traceback (most recent call last):\n"
      "[rank1]:   File \"a.py\", line 1, in <module>\n"
      "[rank0]:   File \"a.py\", line 1, in <module>\n"
      "[rank1]:     f()\n"
      "[rank0]:     f()\n"
      "[rank1]: ValueError: rank one failed\n"
      "[rank0]: KeyError: 'rank zero'\n",
      {{1, kCrash, "ValueError: rank one failed"}, {2, kCrash, "KeyError: 'rank zero'"}});
}

TEST(Traceback, ARanksTracebackEndsSoonAfterItsExceptionWhileOtherRanksWriteOn) {
  // torchrun's combined output: rank 3's traceback ends at its exception line; rank 0 goes on
  // stepping. It must close within a few lines, not when the file falls quiet.
  const std::vector<std::string> lines = {
      "[rank3]: Traceback (most recent call last):",
      "[rank1]: Traceback (most recent call last):",
      "[rank3]:   File \"train.py\", line 9, in <module>",
      "[rank1]:   File \"train.py\", line 9, in <module>",
      "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered",
      "[rank1]: RuntimeError: NCCL communicator was aborted",
  };
  TracebackGrouper grouper;
  std::vector<Traceback> out;
  std::uint64_t line = 0;
  for (const std::string& text : lines) {
    ++line;
    const std::size_t header = text.find("Traceback (");
    grouper.OnLine(line, text, header == std::string::npos ? std::nullopt : std::optional(header),
                   {}, out);
  }
  for (int step = 12; step < 12 + 12 && out.size() < 2; ++step) {
    grouper.OnLine(++line, "[rank0]: step " + std::to_string(step) + " loss 0.3", std::nullopt, {},
                   out);
  }
  ASSERT_EQ(out.size(), 2u) << "still open after " << line << " lines";
  EXPECT_LE(line, 6u + 10u);
  EXPECT_EQ(out[0].summary, "RuntimeError: CUDA error: an illegal memory access was encountered");
  EXPECT_EQ(out[0].header_line, 1u);
  EXPECT_EQ(out[1].summary, "RuntimeError: NCCL communicator was aborted");
  EXPECT_FALSE(grouper.active());
}

TEST(Traceback, RankIdsAreNotTimestamps) {
  // Another rank's indented line must not teach rank 0's traceback that digits may differ.
  ExpectTracebacks(
      "[rank0]: Traceback (most recent call last):\n"
      "[rank1]: /opt/x.py:3: UserWarning: deprecated\n"
      "[rank1]:   warnings.warn(\n"
      "[rank0]:   File \"a.py\", line 1, in <module>\n"
      "[rank1]: Traceback (most recent call last):\n"
      "[rank1]:   File \"a.py\", line 1, in <module>\n"
      "[rank0]: torch.cuda.OutOfMemoryError: CUDA out of memory.\n"
      "[rank1]: RuntimeError: NCCL communicator was aborted\n",
      {{1, kCrash, "torch.cuda.OutOfMemoryError: CUDA out of memory."},
       {5, kCrash, "RuntimeError: NCCL communicator was aborted"}});
}

TEST(Traceback, AnotherRanksMarkerDoesNotExcuseACrash) {
  ExpectTracebacks(
      "[rank1]: Exception ignored in: <function _Iter.__del__>\n"
      "[rank0]: Traceback (most recent call last):\n"
      "[rank0]:   File \"train.py\", line 3, in <module>\n"
      "[rank0]: ValueError: loss is NaN\n",
      {{2, kCrash, "ValueError: loss is NaN"}});
}

TEST(Traceback, RankPrefixedHeaderGluedToAProgressBar) {
  ExpectTracebacks(
      "[rank0]:  50%|#####     | 5/10 [00:05<00:05,  1.00it/s]Traceback (most recent call last):\n"
      "[rank0]:   File \"t.py\", line 1, in <module>\n"
      "[rank0]:     f()\n"
      "[rank0]: RuntimeError: boom\n",
      {{1, kCrash, "RuntimeError: boom"}});
}

TEST(Traceback, TimestampsOfVaryingWidth) {
  ExpectTracebacks(
      "2024-02-21T05:55:25.318312345Z Traceback (most recent call last):\n"
      "2024-02-21T05:55:25.3183Z   File \"x.py\", line 1, in <module>\n"
      "2024-02-21T05:55:25.31831Z     f()\n"
      "2024-02-21T05:55:25.3183152Z RuntimeError: NCCL communicator was aborted on rank 3\n",
      {{1, kCrash, "RuntimeError: NCCL communicator was aborted on rank 3"}});
}

TEST(Traceback, ExceptionLinesOfEveryShape) {
  for (const char* exception :
       {"socket.gaierror: [Errno -2] Name or service not known",
        "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 8.00 GiB",
        "torch._C._LinAlgError: linalg.cholesky: The factorization could not be completed",
        "KeyboardInterrupt", "SystemExit: 1", "_queue.Empty",
        "triton.runtime.errors.OutOfResources: out of resource: shared memory"}) {
    ExpectTracebacks(std::string("Traceback (most recent call last):\n"
                                 "  File \"a.py\", line 1, in <module>\n") +
                         exception + "\n",
                     {{1, kCrash, exception}});
  }
  // Words that are not exceptions do not end a traceback.
  ExpectTracebacks(
      "Traceback (most recent call last):\n"
      "  File \"a.py\", line 1, in <module>\n"
      "Exiting\n"
      "Epoch: 3\n"
      "WARNING:torch.distributed:Sending SIGTERM\n"
      "    f()\n"
      "ValueError: the real one\n",
      {{1, kCrash, "ValueError: the real one"}});
}

TEST(Traceback, FollowsPrefixesWhoseDigitsTick) {
  ExpectTracebacks(
      "2024-02-21T05:55:25.318300Z DEBUG launcher: Traceback (most recent call last):\n"
      "2024-02-21T05:55:25.318312Z DEBUG launcher:   File \"x.py\", line 79, in inner\n"
      "2024-02-21T05:55:25.318318Z DEBUG launcher:     return func(*args, **kwds)\n"
      "2024-02-21T05:55:25.318335Z DEBUG launcher: RuntimeError: Graph compile failed.\n"
      "2024-02-21T05:55:25.318358Z DEBUG Connection{peer=Client}: h2::codec: frame\n",
      {{1, kCrash, "RuntimeError: Graph compile failed."}});
}

TEST(Traceback, HeaderGluedToAProgressBar) {
  ExpectTracebacks(
      "\r  0%|          | 0/30033 [00:00<?, ?it/s]Traceback (most recent call last):\n"
      "  File \"train.py\", line 225, in <module>\n"
      "    train()\n"
      "torch.cuda.OutOfMemoryError: CUDA out of memory.\n",
      {{1, kCrash, "torch.cuda.OutOfMemoryError: CUDA out of memory."}});
}

TEST(Traceback, ChainedExceptionsReportTheLastOne) {
  ExpectTracebacks(
      "Traceback (most recent call last):\n"
      "  File \"a.py\", line 1, in <module>\n"
      "KeyError: 'x'\n"
      "\n"
      "During handling of the above exception, another exception occurred:\n"
      "\n"
      "Traceback (most recent call last):\n"
      "  File \"a.py\", line 3, in <module>\n"
      "ValueError: while handling x\n"
      "\n"
      "The above exception was the direct cause of the following exception:\n"
      "\n"
      "Traceback (most recent call last):\n"
      "  File \"a.py\", line 5, in <module>\n"
      "RuntimeError: final\n",
      {{1, kCrash, "RuntimeError: final"}});
}

TEST(Traceback, SurvivedTracebacksAreWarnings) {
  ExpectTracebacks(
      "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f>\n"
      "Traceback (most recent call last):\n"
      "  File \"dataloader.py\", line 1101, in __del__\n"
      "AssertionError: can only join a child process\n"
      "Exception in thread Thread-3 (_pin_memory_loop):\n"
      "Traceback (most recent call last):\n"
      "  File \"threading.py\", line 1016, in _bootstrap_inner\n"
      "OSError: [Errno 24] Too many open files\n"
      "--- Logging error ---\n"
      "Traceback (most recent call last):\n"
      "  File \"/usr/lib/python3.11/logging/__init__.py\", line 1110, in emit\n"
      "TypeError: not all arguments converted during string formatting\n"
      "epoch 3 done\n",
      {{2, kWarning, "AssertionError: can only join a child process"},
       {6, kWarning, "OSError: [Errno 24] Too many open files"},
       {10, kWarning, "TypeError: not all arguments converted"}});
}

TEST(Traceback, SurvivedMarkersGluedToOutputOrAFewLinesUp) {
  // Real DataLoader teardown noise: the marker glued to a progress bar, and two workers
  // printing at once so the marker sits lines above the second header.
  ExpectTracebacks(
      "2.16it/s]Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__>\n"
      "Traceback (most recent call last):\n"
      "  File \"dataloader.py\", line 1466, in __del__\n"
      "AssertionError: can only test a child process\n"
      "    self._shutdown_workers()Exception ignored in: \n"
      "  File \"dataloader.py\", line 713, in _shutdown_workers\n"
      "<function _DataLoaderIter.__del__ at 0x7f32d70c7f28>\n"
      "Traceback (most recent call last):\n"
      "  File \"dataloader.py\", line 717, in __del__\n"
      "AssertionError: can only join a child process\n"
      "Traceback (most recent call last):\n"
      "  File \"train.py\", line 9, in <module>\n"
      "RuntimeError: real crash\n",
      {{2, kWarning, "AssertionError: can only test a child process"},
       {8, kWarning, "AssertionError: can only join a child process"},
       {11, kCrash, "RuntimeError: real crash"}});  // a finished traceback ends the window
}

TEST(Traceback, ShutdownNoiseOfManyThreadsIsSurvived) {
  // Python 2 interpreter shutdown: several threads print at once, markers glued together,
  // a header glued onto another traceback's frame line.
  ExpectTracebacks(
      "Exception in thread Thread-2 (most likely raised during interpreter shutdown):"
      "Exception in thread Thread-5 (most likely raised during\n"
      "Traceback (most recent call last):\n"
      "  File \"threading.py\", line 801, in __bootstrap_inner\n"
      "  File \"threading.py\", line 754, in run\n"
      "  File \"threading.py\", line 801, in __bootstrap_innerTraceback (most recent call last):\n"
      "  File \"threading.py\", line 754, in run\n"
      "Unhandled exception in thread started by <bound method Reader.__bootstrap>\n"
      "Traceback (most recent call last):\n"
      "  File \"threading.py\", line 774, in __bootstrap\n"
      "TypeError: 'NoneType' object is not callable\n",
      {{2, kWarning, ""}, {5, kWarning, ""}, {8, kWarning, "TypeError"}});
}

TEST(Traceback, UnlessVetoesByTheFinalException) {
  const std::string rule = std::string(kTracebackRule) + "    unless: '^KeyboardInterrupt$'\n";
  const auto events = Detect(rule,
                             "Traceback (most recent call last):\n"
                             "  File \"a.py\", line 1, in <module>\n"
                             "KeyboardInterrupt\n"
                             "Traceback (most recent call last):\n"
                             "  File \"a.py\", line 1, in <module>\n"
                             "ValueError: KeyboardInterrupt is not the exception here\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].line, 4u);
}

TEST(Traceback, ToleratesForeignLinesInsideATraceback) {
  ExpectTracebacks(
      "Traceback (most recent call last):\n"
      "  File \"a.py\", line 1, in <module>\n"
      "[2024-05-21 11:58:06,441] torch.distributed.elastic: [WARNING] Sending SIGTERM\n"
      "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 1 closing signal\n"
      "    f()\n"
      "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
      "============================================================\n",
      {{1, kCrash, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:"}});
}

TEST(Traceback, ExceptionGroupIsOneEvent) {
  ExpectTracebacks(
      "  + Exception Group Traceback (most recent call last):\n"
      "  |   File \"main.py\", line 9, in <module>\n"
      "  |     asyncio.run(main())\n"
      "  | ExceptionGroup: unhandled errors in a TaskGroup (2 sub-exceptions)\n"
      "  +-+---------------- 1 ----------------\n"
      "    | Traceback (most recent call last):\n"
      "    |   File \"main.py\", line 3, in shard\n"
      "    | ValueError: bad shard\n"
      "    +---------------- 2 ----------------\n"
      "    | Traceback (most recent call last):\n"
      "    |   File \"main.py\", line 5, in other\n"
      "    | TypeError: bad type\n"
      "    +------------------------------------\n",
      {{1, kCrash, "ExceptionGroup: unhandled errors in a TaskGroup (2 sub-exceptions)"}});
}

TEST(Traceback, LongExceptionMessagesKeepTheExceptionName) {
  const auto events = Detect(kTracebackRule,
                             "Traceback (most recent call last):\n"
                             "  File \"a.py\", line 1, in <module>\n"
                             "ValueError: bad values " +
                                 std::string(6000, '7') + "\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].summary.starts_with("ValueError: bad values 777")) << events[0].summary;
}

TEST(Traceback, OtherWritersBesideAnExceptionGroupKeepTheirTracebacks) {
  ExpectTracebacks(
      "loader-1   |   + Exception Group Traceback (most recent call last):\n"
      "loader-1   |   |   File \"l.py\", line 3, in <module>\n"
      "loader-1   |   | ExceptionGroup: loader (1 sub-exception)\n"
      "loader-1   |   +-+---------------- 1 ----------------\n"
      "loader-1   |     | Traceback (most recent call last):\n"
      "loader-1   |     | ValueError: v\n"
      "trainer-1  | Traceback (most recent call last):\n"
      "trainer-1  |   File \"t.py\", line 9, in <module>\n"
      "trainer-1  | ValueError: bad config\n",
      {{1, kCrash, "ExceptionGroup: loader (1 sub-exception)"},
       {7, kCrash, "ValueError: bad config"}});
}

TEST(Traceback, ClockPrefixesSettleAsClocksAndKeepRanksApart) {
  ExpectTracebacks(
      "2024-02-21T05:55:25.318200Z [rank1]: Exception in thread Thread-3:\n"
      "2024-02-21T05:55:25.318300Z [rank0]: Traceback (most recent call last):\n"
      "2024-02-21T05:55:25.318400Z [rank0]:   File \"t.py\", line 9, in <module>\n"
      "2024-02-21T05:55:26.100000Z [rank0]:     step()\n"
      "2024-02-21T05:55:26.200000Z [rank0]: ValueError: bad batch\n",
      {{2, kCrash, "ValueError: bad batch"}});
}

TEST(Traceback, CutOffTracebackStillFiresAtEndOfInput) {
  ExpectTracebacks(
      "Traceback (most recent call last):\n"
      "  File \"a.py\", line 1, in <module>\n",
      {{1, kCrash, "(no exception line followed)"}});
}

TEST(Traceback, SameResultWhateverTheBatchBoundaries) {
  std::string log;
  for (int i = 0; i < 2000; ++i) {
    log += "step " + std::to_string(i) + " loss=0.5\n";
  }
  log += "[rank3]: Traceback (most recent call last):\n";
  for (int i = 0; i < 50; ++i) {
    log += "[rank3]:   File \"m.py\", line " + std::to_string(i) + ", in f\n[rank3]:     g()\n";
  }
  log += "[rank3]: RuntimeError: deep\n";
  for (std::size_t max_line : {64u, 1024u, 65536u}) {
    const auto events = Detect(kTracebackRule, log, max_line);
    ASSERT_EQ(events.size(), 1u) << max_line;
    EXPECT_EQ(events[0].line, 2001u);
    EXPECT_EQ(events[0].summary, "RuntimeError: deep");
    EXPECT_EQ(events[0].summary_line, 2102u);
  }
}

TEST(Traceback, OpenTracebacksAreBounded) {
  TracebackGrouper grouper;
  std::vector<Traceback> done;
  for (std::size_t i = 0; i < TracebackGrouper::kMaxOpen + 10; ++i) {
    const std::string line = "[rank" + std::to_string(i) + "]: Traceback (most recent call last):";
    grouper.OnLine(i + 1, line, line.find("Traceback"), {}, done);
  }
  EXPECT_EQ(done.size(), 10u);  // the oldest were closed to make room
  grouper.CloseAll(done);
  EXPECT_EQ(done.size(), TracebackGrouper::kMaxOpen + 10);
  EXPECT_FALSE(grouper.active());
}

}  // namespace
}  // namespace trainwatch::detect
