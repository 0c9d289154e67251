// For tests that leave a reader blocked in open(2) on a FIFO (a read past its deadline, left
// behind): releases it, so the thread ends before the test does.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

namespace trainwatch::testing {

// Opens `fifo` for writing once its reader waits in open(2): the reader returns.
inline void ReleaseFifoReader(const std::string& fifo) {
  for (int i = 0; i < 200; ++i) {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
      ::close(fd);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // not in open(2) yet
  }
}

}  // namespace trainwatch::testing
