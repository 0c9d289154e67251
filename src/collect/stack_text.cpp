#include "collect/stack_text.h"

#include <re2/re2.h>

#include <algorithm>

namespace trainwatch::collect {
namespace {

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return lines;
}

// Drops the threads no frame was read of ("Unable to locate python frame").
std::vector<ThreadStack> WithFrames(std::vector<ThreadStack> threads) {
  std::erase_if(threads, [](const ThreadStack& thread) { return thread.frames.empty(); });
  return threads;
}

// gdb's thread header: `Thread 3 (Thread 0x7f... (LWP 22263) "python3"):`.
const RE2& GdbThread() {
  static const RE2 kThread(R"re(^Thread \d+ \(.*LWP (\d+)\)(?: "([^"]*)")?\):?\s*$)re");
  return kThread;
}

}  // namespace

std::vector<ThreadStack> ParseGdbPythonStacks(std::string_view text) {
  static const RE2 kFile(R"re(^  File "(.*)", line (\d+), in (.+)$)re");
  static const RE2 kBuiltin(R"re(^  <built-in method (\S+) of .*>$)re");
  std::vector<ThreadStack> threads;
  for (std::string_view line : Lines(text)) {
    ThreadStack thread;
    std::string file;
    std::string function;
    int number = 0;
    if (RE2::FullMatch(line, GdbThread(), &thread.tid, &thread.name)) {
      threads.push_back(std::move(thread));
    } else if (threads.empty()) {
      continue;
    } else if (RE2::FullMatch(line, kFile, &file, &number, &function)) {
      threads.back().frames.push_back({function, file, number});
    } else if (RE2::FullMatch(line, kBuiltin, &function)) {
      threads.back().frames.push_back({function, "", 0});
    }
  }
  return WithFrames(std::move(threads));
}

std::vector<ThreadStack> ParseGdbNativeStacks(std::string_view text) {
  // `#0  0x00007f... in __futex_abstimed_wait_common (...) at ...`, or without the address
  // for the innermost frame: `#0  __futex_abstimed_wait_common (...)`.
  static const RE2 kFrame(R"re(^#\d+\s+(?:0x[0-9a-f]+ in )?([^ (]+).*$)re");
  std::vector<ThreadStack> threads;
  for (std::string_view line : Lines(text)) {
    ThreadStack thread;
    std::string function;
    if (RE2::FullMatch(line, GdbThread(), &thread.tid, &thread.name)) {
      threads.push_back(std::move(thread));
    } else if (!threads.empty() && RE2::FullMatch(line, kFrame, &function)) {
      threads.back().frames.push_back({function, "", 0});
    }
  }
  return WithFrames(std::move(threads));
}

std::vector<ThreadStack> ParsePySpyDump(std::string_view text) {
  // `Thread 12345 (idle): "MainThread"` then `    all_reduce (torch/.../distributed_c10d.py:1541)`
  static const RE2 kThread(R"re(^Thread (?:0x[0-9A-Fa-f]+|(\d+)).*?(?:: "([^"]*)")?\s*$)re");
  static const RE2 kFrame(R"re(^    (\S.*) \((.*):(\d+)\)\s*$)re");
  std::vector<ThreadStack> threads;
  for (std::string_view line : Lines(text)) {
    ThreadStack thread;
    std::string function;
    std::string file;
    int number = 0;
    if (RE2::FullMatch(line, kThread, &thread.tid, &thread.name)) {
      threads.push_back(std::move(thread));
    } else if (!threads.empty() && RE2::FullMatch(line, kFrame, &function, &file, &number)) {
      threads.back().frames.push_back({function, file, number});
    }
  }
  return WithFrames(std::move(threads));
}

std::vector<ThreadStack> ParseEuStack(std::string_view text) {
  static const RE2 kThread(R"re(^TID (\d+):\s*$)re");
  static const RE2 kFrame(R"re(^#\d+\s+0x[0-9a-f]+\s*(\S*).*$)re");
  std::vector<ThreadStack> threads;
  for (std::string_view line : Lines(text)) {
    ThreadStack thread;
    std::string function;
    if (RE2::FullMatch(line, kThread, &thread.tid)) {
      threads.push_back(std::move(thread));
    } else if (!threads.empty() && RE2::FullMatch(line, kFrame, &function)) {
      threads.back().frames.push_back({function.empty() ? "??" : function, "", 0});
    }
  }
  return WithFrames(std::move(threads));
}

std::vector<ThreadStack> ParseFaulthandler(std::string_view text) {
  static const RE2 kThread(
      R"re(^(Current thread|Thread) 0x[0-9a-f]+ \(most recent call first\):\s*$)re");
  static const RE2 kFrame(R"re(^  File "(.*)", line (\d+) in (.+)$)re");
  std::vector<ThreadStack> threads;
  for (std::string_view line : Lines(text)) {
    std::string kind;
    std::string function;
    std::string file;
    int number = 0;
    if (RE2::FullMatch(line, kThread, &kind)) {
      ThreadStack thread;
      thread.name = kind == "Current thread" ? "current" : "";
      threads.push_back(std::move(thread));
    } else if (!threads.empty() && RE2::FullMatch(line, kFrame, &file, &number, &function)) {
      threads.back().frames.push_back({function, file, number});
    }
  }
  // The interpreter lists its threads newest first: the main thread, the oldest, comes last.
  std::reverse(threads.begin(), threads.end());
  return WithFrames(std::move(threads));
}

const ThreadStack* MainThread(const std::vector<ThreadStack>& threads, long pid) {
  for (const ThreadStack& thread : threads) {
    if (thread.tid == pid && !thread.frames.empty()) {
      return &thread;
    }
  }
  for (const ThreadStack& thread : threads) {
    if (!thread.frames.empty()) {
      return &thread;
    }
  }
  return nullptr;
}

}  // namespace trainwatch::collect
