// What the stack tools print, read back as threads and frames: gdb's `thread apply all py-bt`
// (the CPython gdb helpers) and `thread apply all bt`, `py-spy dump`, `eu-stack`, and Python's
// faulthandler. The raw text goes into the bundle as it is; these frames are what the ranks
// are grouped and the suspects named by. Pure; any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trainwatch::collect {

struct StackFrame {
  std::string function;  // "all_reduce", "<module>", "sleep" (a built-in), "pthread_cond_wait"
  std::string file;      // for Python frames: "/tmp/train.py"; empty for built-ins and native
  int line = 0;
};

struct ThreadStack {
  long tid = 0;  // the kernel's thread id where the tool says it (LWP); 0 when it does not
  std::string name;
  std::vector<StackFrame> frames;  // innermost first
};

std::vector<ThreadStack> ParseGdbPythonStacks(std::string_view text);
std::vector<ThreadStack> ParseGdbNativeStacks(std::string_view text);
std::vector<ThreadStack> ParsePySpyDump(std::string_view text);
std::vector<ThreadStack> ParseEuStack(std::string_view text);
// faulthandler names threads by their pthread handle, not the kernel id: tid stays 0, and the
// thread that handled the signal (the "Current thread") is named "current". Threads come
// oldest first (the main thread first), the reverse of faulthandler's order.
std::vector<ThreadStack> ParseFaulthandler(std::string_view text);

// The stack of the process's main thread (tid == pid), else the first thread with frames;
// nullptr when there is none.
const ThreadStack* MainThread(const std::vector<ThreadStack>& threads, long pid);

}  // namespace trainwatch::collect
