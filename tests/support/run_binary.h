// Runs the real trainwatch binary (or any program) as a child process for integration
// tests: stdin from a file, stdout and stderr captured, a deadline, and the child's peak
// memory. Blocking; test thread only.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace trainwatch::testing {

struct RunResult {
  int exit_code = -1;  // -1 when killed by a signal or the deadline
  bool timed_out = false;
  std::string out;
  std::string err;
  long max_rss_kib = 0;  // peak resident memory of the child
};

// Runs `argv` (argv[0] is the program path). `stdin_path` empty means /dev/null.
RunResult RunBinary(const std::vector<std::string>& argv, const std::string& stdin_path = "",
                    std::chrono::seconds deadline = std::chrono::seconds(120));

// The path of the built trainwatch binary.
std::string TrainwatchBinary();

}  // namespace trainwatch::testing
