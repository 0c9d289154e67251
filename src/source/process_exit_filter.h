// The process-events connector tells every fork, exec, uid change, thread exit and process
// exit on the machine; the daemon needs only the last. A classic BPF socket filter, attached
// before the socket joins the events, has the kernel drop the rest before they are queued:
// on a node running a data loader's workers or a build, those wake the daemon thousands of
// times a minute (an idle daemon watching 100 files beside a ctest run: 8,557 wake-ups and
// 20,421 reads in 60 s, nearly all for nothing). Any thread.
#pragma once

#include <linux/filter.h>

#include <string>
#include <vector>

namespace trainwatch::source {

// The program: accepts a datagram whose proc_event is PROC_EVENT_EXIT of a thread group's
// leader (pid == tgid: a process, not one of its threads), drops every other. A datagram too
// short to hold the fields is dropped.
std::vector<sock_filter> ProcessExitFilter();

// Attaches the program to `fd` (SO_ATTACH_FILTER); false with `why` when the kernel refuses.
bool AttachProcessExitFilter(int fd, std::string& why);

}  // namespace trainwatch::source
