// How a child process ended: what `wrap` reports and `exit` rules judge. Value type.
#pragma once

#include <cstdint>

namespace trainwatch::source {

struct ChildEnd {
  std::int64_t exit_code = 0;
  int signal = 0;  // 0 when it exited on its own
  // What a shell reports: the exit code, or 128 + the signal.
  int ShellStatus() const { return signal != 0 ? 128 + signal : static_cast<int>(exit_code); }
};

}  // namespace trainwatch::source
