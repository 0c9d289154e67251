#include "collect/stack_text.h"

#include <gtest/gtest.h>

#include <string>

namespace trainwatch::collect {
namespace {

// gdb 13 with python3.11-dbg's helpers, attached to a gloo rank blocked in all_reduce.
constexpr const char* kGdbPyBt = R"(
[Thread debugging using libthread_db enabled]
Using host libthread_db library "/lib/x86_64-linux-gnu/libthread_db.so.1".
0x00007fdf3c26ff16 in __futex_abstimed_wait_common () from /lib/x86_64-linux-gnu/libc.so.6
Thread 3 (Thread 0x7fdf194a96c0 (LWP 22263) "python3"):
Unable to locate python frame
Thread 1 (Thread 0x7fdf3c1e9040 (LWP 22254) "python3"):
Traceback (most recent call first):
  <built-in method wait of PyCapsule object at remote 0x7fdf1b2934e0>
  File "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", line 1541, in all_reduce
    work.wait()
  File "/tmp/h/hang.py", line 9, in <module>
    dist.all_reduce(t)
[Inferior 1 (process 22254) detached]
)";

constexpr const char* kEuStack = R"(PID 22254 - process
TID 22254:
#0  0x00007fdf3c26ff16 __futex_abstimed_wait_common
#1  0x00007fdf3c2725d8 pthread_cond_wait@@GLIBC_2.3.2
#2  0x00007fdf37ec2843 c10d::Work::wait(std::chrono::duration<long, std::ratio<1l, 1000l> >)
#3  0x00007fdf3b7a9b4e
TID 22263:
#0  0x00007fdf3c2f2f36 epoll_wait
#1  0x00007fdf31bcaecf gloo::transport::tcp::Loop::run()
)";

TEST(StackText, ReadsGdbPyBt) {
  const std::vector<ThreadStack> threads = ParseGdbPythonStacks(kGdbPyBt);
  ASSERT_EQ(threads.size(), 1u);  // the thread without a Python frame is left out
  EXPECT_EQ(threads[0].tid, 22254);
  EXPECT_EQ(threads[0].name, "python3");
  ASSERT_EQ(threads[0].frames.size(), 3u);
  EXPECT_EQ(threads[0].frames[0].function, "wait");
  EXPECT_EQ(threads[0].frames[0].file, "");
  EXPECT_EQ(threads[0].frames[1].function, "all_reduce");
  EXPECT_EQ(threads[0].frames[1].line, 1541);
  EXPECT_EQ(threads[0].frames[2].function, "<module>");
  EXPECT_EQ(threads[0].frames[2].file, "/tmp/h/hang.py");
  EXPECT_EQ(MainThread(threads, 22254), &threads[0]);
}

TEST(StackText, ReadsEuStackAndFindsTheMainThread) {
  const std::vector<ThreadStack> threads = ParseEuStack(kEuStack);
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_EQ(threads[1].tid, 22263);
  EXPECT_EQ(threads[0].frames[2].function, "c10d::Work::wait(std::chrono::duration<long,");
  EXPECT_EQ(threads[0].frames[3].function, "??");
  EXPECT_EQ(MainThread(threads, 22263), &threads[1]);
  EXPECT_EQ(MainThread(threads, 1), &threads[0]);  // no such thread: the first
  EXPECT_EQ(MainThread({}, 1), nullptr);
}

TEST(StackText, ReadsGdbBacktraces) {
  const std::vector<ThreadStack> threads = ParseGdbNativeStacks(
      "Thread 1 (Thread 0x7f (LWP 7) \"python3\"):\n"
      "#0  __futex_abstimed_wait_common (private=0) at ./nptl/futex-internal.c:57\n"
      "#1  0x00007fdf3c2725d8 in ___pthread_cond_wait (cond=0x1) at pthread_cond_wait.c:618\n");
  ASSERT_EQ(threads.size(), 1u);
  ASSERT_EQ(threads[0].frames.size(), 2u);
  EXPECT_EQ(threads[0].frames[0].function, "__futex_abstimed_wait_common");
  EXPECT_EQ(threads[0].frames[1].function, "___pthread_cond_wait");
}

TEST(StackText, ReadsPySpyDump) {
  const std::vector<ThreadStack> threads = ParsePySpyDump(
      "Process 4242: python train.py\nPython v3.11.2 (/usr/bin/python3.11)\n\n"
      "Thread 4242 (idle): \"MainThread\"\n"
      "    all_reduce (torch/distributed/distributed_c10d.py:1541)\n"
      "    <module> (train.py:9)\n");
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_EQ(threads[0].tid, 4242);
  EXPECT_EQ(threads[0].name, "MainThread");
  ASSERT_EQ(threads[0].frames.size(), 2u);
  EXPECT_EQ(threads[0].frames[1].file, "train.py");
  EXPECT_EQ(threads[0].frames[1].line, 9);
}

TEST(StackText, ReadsFaulthandlerMainThreadFirst) {
  const std::vector<ThreadStack> threads = ParseFaulthandler(
      "Thread 0x00007f0000000002 (most recent call first):\n"
      "  File \"/usr/lib/python3.11/threading.py\", line 320 in wait\n\n"
      "Current thread 0x00007f0000000001 (most recent call first):\n"
      "  File \"/job/data.py\", line 41 in next_batch\n"
      "  File \"/job/train.py\", line 88 in <module>\n");
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_EQ(threads[0].name, "current");
  EXPECT_EQ(threads[0].frames[0].function, "next_batch");
  EXPECT_EQ(threads[0].frames[1].line, 88);
}

}  // namespace
}  // namespace trainwatch::collect
