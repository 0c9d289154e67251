// Tracebacks whose "Traceback (most recent call last):" header is not in the log: an excerpt
// pasted into a bug report, a log that starts mid-traceback, or only the final line of a
// fatal exception. The shipped rule's pattern matches frames and fatal exception lines too.
#include <gtest/gtest.h>

#include "detect/detector_fixture.h"

namespace trainwatch::detect {
namespace {

constexpr auto kCrash = rules::RuleKind::kCrash;
constexpr auto kWarning = rules::RuleKind::kWarning;

std::vector<Event> DetectExcerpt(const std::string& log) {
  return Detect(kExcerptTracebackRule, log);
}

TEST(HeaderlessTraceback, FramesRunningIntoAnExceptionAreOneCrash) {
  const auto events = DetectExcerpt(
      "  File \"/opt/train.py\", line 88, in <module>\n"
      "    main()\n"
      "  File \"/opt/train.py\", line 80, in main\n"
      "    loss.backward()\n"
      "    ^^^^^^^^^^^^^^^\n"
      "RuntimeError: Expected all tensors to be on the same device\n"
      "epoch 2\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].line, 1u);
  EXPECT_EQ(events[0].kind, kCrash);
  EXPECT_EQ(events[0].summary, "RuntimeError: Expected all tensors to be on the same device");
  EXPECT_EQ(events[0].summary_line, 6u);
}

TEST(HeaderlessTraceback, ALogStartingMidTracebackWithRankPrefixes) {
  const auto events = DetectExcerpt(
      "[rank1]:     dist.all_reduce(input_, group=self.device_group)\n"
      "[rank1]:   File \"/x/c10d_logger.py\", line 83, in wrapper\n"
      "[rank0]:   File \"/x/c10d_logger.py\", line 83, in wrapper\n"
      "[rank1]:     return func(*args, **kwargs)\n"
      "[rank0]:     return func(*args, **kwargs)\n"
      "[rank1]: RuntimeError: HcclAllreduce, error code is 6\n"
      "[rank0]: ValueError: rank zero\n");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].line, 2u);
  EXPECT_EQ(events[0].summary, "RuntimeError: HcclAllreduce, error code is 6");
  EXPECT_EQ(events[1].line, 3u);
  EXPECT_EQ(events[1].summary, "ValueError: rank zero");
}

TEST(HeaderlessTraceback, TimestampedFramesFollowTheTickingClock) {
  const auto events = DetectExcerpt(
      "2024-02-21T05:55:25.318312Z DEBUG launcher:   File \"/usr/lib/c.py\", line 79, in inner\n"
      "2024-02-21T05:55:25.318318Z DEBUG launcher:     return func(*args, **kwds)\n"
      "2024-02-21T05:55:25.318335Z DEBUG launcher: RuntimeError: Graph compile failed.\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].line, 1u);
  EXPECT_EQ(events[0].summary, "RuntimeError: Graph compile failed.");
}

TEST(HeaderlessTraceback, ALoneFinalLineOfAFatalClassIsACrash) {
  const auto events = DetectExcerpt(
      "loading shards\n"
      "torch.distributed.DistBackendError: NCCL error in: ../nccl.cpp:1, remote process exited\n"
      "[rank1]: torch.multiprocessing.spawn.ProcessRaisedException: \n"
      "MemoryError\n");
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].line, 2u);
  EXPECT_EQ(events[0].kind, kCrash);
  EXPECT_TRUE(events[0].summary.starts_with("torch.distributed.DistBackendError: NCCL error"));
  EXPECT_EQ(events[1].line, 3u);
  EXPECT_EQ(events[1].summary, "torch.multiprocessing.spawn.ProcessRaisedException:");
  EXPECT_EQ(events[2].summary, "MemoryError");
}

TEST(HeaderlessTraceback, ExceptionNamesInsideMessagesStayQuiet) {
  EXPECT_TRUE(DetectExcerpt("INFO: caught torch.distributed.DistBackendError: x, retrying\n"
                            "WARNING:root:MemoryError: \n"
                            "OutOfMemoryError: handled, halving the batch\n"
                            "RuntimeError: not a fatal class without its frames\n")
                  .empty());
}

TEST(HeaderlessTraceback, APrintedStackWithoutAnExceptionIsQuiet) {
  // traceback.print_stack() and logging's stack_info print frames and no exception; frames
  // interrupted by other output are not a traceback either.
  EXPECT_TRUE(DetectExcerpt("Stack (most recent call last):\n"
                            "  File \"a.py\", line 3, in <module>\n"
                            "    f()\n"
                            "INFO epoch 2 done\n"
                            "ValueError: logged later, unrelated\n"
                            "  File \"b.py\", line 9, in g\n"
                            "    h()\n")
                  .empty());
}

TEST(HeaderlessTraceback, AFullTracebackEndingInAFatalClassIsOneEvent) {
  const auto events = DetectExcerpt(
      "Traceback (most recent call last):\n"
      "  File \"train.py\", line 3, in <module>\n"
      "    main()\n"
      "torch.distributed.DistBackendError: NCCL error in: ../nccl.cpp:1\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].line, 1u);
  EXPECT_EQ(events[0].summary_line, 4u);
}

TEST(HeaderlessTraceback, ATracebackPythonSurvivesStaysOneWarning) {
  const auto events = DetectExcerpt(
      "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f>\n"
      "Traceback (most recent call last):\n"
      "  File \"dataloader.py\", line 1478, in __del__\n"
      "    self._shutdown_workers()\n"
      "AssertionError: can only join a child process\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, kWarning);
  EXPECT_EQ(events[0].line, 2u);
}

}  // namespace
}  // namespace trainwatch::detect
