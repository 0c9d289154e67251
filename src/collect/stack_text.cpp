#include "collect/stack_text.h"

#include <re2/re2.h>

#include <algorithm>
#include <optional>

#include "core/split.h"

namespace trainwatch::collect {
namespace {

// Every tool's output has the same shape: a header line per thread, then its frames. `header`
// reads a line as a thread's header, `frame` as one of its frames; other lines are skipped,
// as are threads no frame was read of ("Unable to locate python frame").
template <typename Header, typename Frame>
std::vector<ThreadStack> ParseThreads(std::string_view text, Header header, Frame frame) {
  std::vector<ThreadStack> threads;
  ForEachPiece(text, '\n', [&](std::string_view line) {
    if (std::optional<ThreadStack> thread = header(line)) {
      threads.push_back(std::move(*thread));
    } else if (!threads.empty()) {
      if (std::optional<StackFrame> read = frame(line)) {
        threads.back().frames.push_back(std::move(*read));
      }
    }
  });
  std::erase_if(threads, [](const ThreadStack& thread) { return thread.frames.empty(); });
  return threads;
}

// gdb's thread header: `Thread 3 (Thread 0x7f... (LWP 22263) "python3"):`.
std::optional<ThreadStack> GdbThread(std::string_view line) {
  static const RE2 kThread(R"re(^Thread \d+ \(.*LWP (\d+)\)(?: "([^"]*)")?\):?\s*$)re");
  ThreadStack thread;
  if (!RE2::FullMatch(line, kThread, &thread.tid, &thread.name)) {
    return std::nullopt;
  }
  return thread;
}

// A frame of only a function name: the first group of `pattern`, "??" when it is empty.
std::optional<StackFrame> NativeFrame(std::string_view line, const RE2& pattern) {
  std::string function;
  if (!RE2::FullMatch(line, pattern, &function)) {
    return std::nullopt;
  }
  return StackFrame{function.empty() ? "??" : function, "", 0};
}

// A Python frame `pattern` reads as (file, line, function) or, with `function_first`,
// (function, file, line).
std::optional<StackFrame> PythonFrame(std::string_view line, const RE2& pattern,
                                      bool function_first = false) {
  StackFrame frame;
  const bool matched =
      function_first ? RE2::FullMatch(line, pattern, &frame.function, &frame.file, &frame.line)
                     : RE2::FullMatch(line, pattern, &frame.file, &frame.line, &frame.function);
  return matched ? std::optional<StackFrame>(std::move(frame)) : std::nullopt;
}

}  // namespace

std::vector<ThreadStack> ParseGdbPythonStacks(std::string_view text) {
  static const RE2 kFile(R"re(^  File "(.*)", line (\d+), in (.+)$)re");
  static const RE2 kBuiltin(R"re(^  <built-in method (\S+) of .*>$)re");
  return ParseThreads(text, GdbThread, [](std::string_view line) {
    std::optional<StackFrame> frame = PythonFrame(line, kFile);
    return frame ? frame : NativeFrame(line, kBuiltin);
  });
}

std::vector<ThreadStack> ParseGdbNativeStacks(std::string_view text) {
  // `#0  0x00007f... in __futex_abstimed_wait_common (...) at ...`, or without the address
  // for the innermost frame: `#0  __futex_abstimed_wait_common (...)`.
  static const RE2 kFrame(R"re(^#\d+\s+(?:0x[0-9a-f]+ in )?([^ (]+).*$)re");
  return ParseThreads(text, GdbThread,
                      [](std::string_view line) { return NativeFrame(line, kFrame); });
}

std::vector<ThreadStack> ParsePySpyDump(std::string_view text) {
  // `Thread 12345 (idle): "MainThread"` then `    all_reduce (torch/.../distributed_c10d.py:1541)`
  static const RE2 kThread(R"re(^Thread (?:0x[0-9A-Fa-f]+|(\d+)).*?(?:: "([^"]*)")?\s*$)re");
  static const RE2 kFrame(R"re(^    (\S.*) \((.*):(\d+)\)\s*$)re");
  return ParseThreads(
      text,
      [](std::string_view line) -> std::optional<ThreadStack> {
        ThreadStack thread;
        if (!RE2::FullMatch(line, kThread, &thread.tid, &thread.name)) {
          return std::nullopt;
        }
        return thread;
      },
      [](std::string_view line) { return PythonFrame(line, kFrame, /*function_first=*/true); });
}

std::vector<ThreadStack> ParseEuStack(std::string_view text) {
  static const RE2 kThread(R"re(^TID (\d+):\s*$)re");
  static const RE2 kFrame(R"re(^#\d+\s+0x[0-9a-f]+\s*(\S*).*$)re");
  return ParseThreads(
      text,
      [](std::string_view line) -> std::optional<ThreadStack> {
        ThreadStack thread;
        if (!RE2::FullMatch(line, kThread, &thread.tid)) {
          return std::nullopt;
        }
        return thread;
      },
      [](std::string_view line) { return NativeFrame(line, kFrame); });
}

std::vector<ThreadStack> ParseFaulthandler(std::string_view text) {
  static const RE2 kThread(
      R"re(^(Current thread|Thread) 0x[0-9a-f]+ \(most recent call first\):\s*$)re");
  static const RE2 kFrame(R"re(^  File "(.*)", line (\d+) in (.+)$)re");
  std::vector<ThreadStack> threads = ParseThreads(
      text,
      [](std::string_view line) -> std::optional<ThreadStack> {
        std::string kind;
        if (!RE2::FullMatch(line, kThread, &kind)) {
          return std::nullopt;
        }
        ThreadStack thread;
        thread.name = kind == "Current thread" ? "current" : "";
        return thread;
      },
      [](std::string_view line) { return PythonFrame(line, kFrame); });
  // The interpreter lists its threads newest first: the main thread, the oldest, comes last.
  std::reverse(threads.begin(), threads.end());
  return threads;
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
