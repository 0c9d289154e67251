#include "source/process_exits.h"

#include <gtest/gtest.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/unique_fd.h"
#include "core/uv_handle.h"
#include "source/process_exit_filter.h"

namespace trainwatch::source {
namespace {

// One netlink message as the kernel sends it for a process event.
std::vector<char> EventMessage(decltype(proc_event::what) what, int pid, int tgid, int code,
                               std::uint32_t idx = CN_IDX_PROC) {
  proc_event event{};
  event.what = what;
  event.event_data.exit.process_pid = pid;
  event.event_data.exit.process_tgid = tgid;
  event.event_data.exit.exit_code = code;
  event.event_data.exit.exit_signal = SIGCHLD;
  cn_msg connector{};
  connector.id.idx = idx;
  connector.id.val = CN_VAL_PROC;
  connector.len = sizeof event;
  nlmsghdr header{};
  header.nlmsg_len = NLMSG_HDRLEN + sizeof connector + sizeof event;
  header.nlmsg_type = NLMSG_DONE;
  std::vector<char> bytes(NLMSG_ALIGN(header.nlmsg_len));
  std::memcpy(bytes.data(), &header, sizeof header);
  std::memcpy(bytes.data() + NLMSG_HDRLEN, &connector, sizeof connector);
  std::memcpy(bytes.data() + NLMSG_HDRLEN + sizeof connector, &event, sizeof event);
  return bytes;
}

// The kernel runs the filter: on a datagram socket pair, as it would on the connector's.
TEST(ProcessExitFilter, TheKernelQueuesProcessExitsOnly) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair), 0);
  const UniqueFd sender(pair[0]);
  const UniqueFd receiver(pair[1]);
  std::string why;
  ASSERT_TRUE(AttachProcessExitFilter(receiver.get(), why)) << why;
  std::vector<char> short_exit = EventMessage(proc_event::PROC_EVENT_EXIT, 9, 9, 0);
  short_exit.resize(NLMSG_HDRLEN + sizeof(cn_msg) + 20);  // cut before the pids
  for (const std::vector<char>& datagram :
       {EventMessage(proc_event::PROC_EVENT_FORK, 4244, 4244, 0),
        EventMessage(proc_event::PROC_EVENT_EXIT, 4243, 4242, 0),  // a thread of 4242
        EventMessage(proc_event::PROC_EVENT_EXEC, 4245, 4245, 0), short_exit,
        EventMessage(proc_event::PROC_EVENT_EXIT, 4242, 4242, SIGKILL),
        EventMessage(proc_event::PROC_EVENT_EXIT, 4246, 4246, 1 << 8)}) {
    ASSERT_EQ(::send(sender.get(), datagram.data(), datagram.size(), 0),
              static_cast<ssize_t>(datagram.size()));
  }
  std::vector<ProcessExit> exits;
  char buffer[4096];
  for (ssize_t n = 0; (n = ::recv(receiver.get(), buffer, sizeof buffer, 0)) > 0;) {
    const std::vector<ProcessExit> some = ParseProcessExits({buffer, static_cast<std::size_t>(n)});
    ASSERT_EQ(some.size(), 1u) << "a datagram the filter let through holds an exit";
    exits.push_back(some[0]);
  }
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_EQ(exits[0].pid, 4242);
  EXPECT_EQ(exits[0].status, SIGKILL);
  EXPECT_EQ(exits[1].pid, 4246);
}

TEST(ParseProcessExits, TakesProcessExitsAndLeavesThreadsOtherEventsAndTruncationOut) {
  std::vector<char> datagram = EventMessage(proc_event::PROC_EVENT_EXIT, 4242, 4242, SIGKILL);
  for (const std::vector<char>& more :
       {EventMessage(proc_event::PROC_EVENT_EXIT, 4243, 4242, 0),  // a thread of 4242
        EventMessage(proc_event::PROC_EVENT_FORK, 4244, 4244, 0),
        EventMessage(proc_event::PROC_EVENT_EXIT, 4245, 4245, 0, /*idx=*/7),  // not proc events
        EventMessage(proc_event::PROC_EVENT_EXIT, 4246, 4246, 1 << 8)}) {
    datagram.insert(datagram.end(), more.begin(), more.end());
  }
  const std::vector<ProcessExit> exits = ParseProcessExits(datagram);
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_EQ(exits[0].pid, 4242);
  EXPECT_EQ(exits[0].status, SIGKILL);
  EXPECT_EQ(exits[1].pid, 4246);
  EXPECT_EQ(exits[1].status, 1 << 8);
  // A message cut short, or a length that points past the datagram, ends the parse quietly.
  std::vector<char> cut = EventMessage(proc_event::PROC_EVENT_EXIT, 7, 7, 0);
  cut.resize(cut.size() - 8);
  EXPECT_TRUE(ParseProcessExits(cut).empty());
  std::vector<char> lying = EventMessage(proc_event::PROC_EVENT_EXIT, 7, 7, 0);
  const std::uint32_t huge = 1 << 20;
  std::memcpy(lying.data(), &huge, sizeof huge);
  EXPECT_TRUE(ParseProcessExits(lying).empty());
  EXPECT_TRUE(ParseProcessExits({}).empty());
}

TEST(DescribeWaitStatus, SaysTheSignalByNameOrTheExitCode) {
  EXPECT_EQ(DescribeWaitStatus(SIGKILL), "killed by signal 9 (SIGKILL)");
  EXPECT_EQ(DescribeWaitStatus(SIGABRT | 0x80), "killed by signal 6 (SIGABRT), core dumped");
  EXPECT_EQ(DescribeWaitStatus(1 << 8), "exit code 1");
  EXPECT_EQ(DescribeWaitStatus(0), "exit code 0");
}

// The real kernel: a child SIGKILLed here is heard with its status, though the watch is not
// its parent's waitpid. Needs CAP_NET_ADMIN in the first network namespace (root on a host).
TEST(ProcessExitWatch, HearsAProcessKilledBySignalFromTheKernel) {
  uv_loop_t loop;
  ASSERT_EQ(uv_loop_init(&loop), 0);
  std::optional<int> heard;
  pid_t child = 0;
  {
    ProcessExitWatch watch;
    std::string why;
    if (!watch.Start(
            &loop,
            [&](const ProcessExit& exit) {
              if (exit.pid == child) {
                heard = exit.status;
                uv_stop(&loop);
              }
            },
            why)) {
      uv_loop_close(&loop);
      GTEST_SKIP() << "no process events here: " << why;
    }
    child = ::fork();
    if (child == 0) {
      ::pause();
      ::_exit(0);
    }
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    // The event is on its way once waitpid returned; a deadline in case it never comes.
    int status_unused = 0;
    UvHandle<uv_timer_t> deadline = UvHandle<uv_timer_t>::Make(&loop, status_unused, uv_timer_init);
    deadline->data = &loop;
    uv_timer_start(
        deadline.get(), [](uv_timer_t* timer) { uv_stop(static_cast<uv_loop_t*>(timer->data)); },
        10000, 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    deadline.Reset();
    watch.Stop();
  }
  uv_run(&loop, UV_RUN_DEFAULT);  // the poll handle's close
  uv_loop_close(&loop);
  ASSERT_TRUE(heard.has_value()) << "no exit heard for pid " << child;
  EXPECT_EQ(DescribeWaitStatus(*heard), "killed by signal 9 (SIGKILL)");
}

}  // namespace
}  // namespace trainwatch::source
