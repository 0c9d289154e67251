// LD_PRELOAD shim for .ci/tsan: Debian's libuv (not built with ThreadSanitizer) closes file
// descriptors with syscall(SYS_close, fd), which TSan does not see. When a thread-pool job then
// opens a file and gets the same number, TSan reports a race between libuv's last use of the
// old descriptor (epoll_ctl, read, accept4 on the loop thread) and the job's close of the new
// one. Routing that one system call through close() lets TSan's interceptor record it; every
// other system call goes to libc's syscall() unchanged.
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>

// Like glibc's own syscall(), it takes six arguments whatever the call needs.
extern "C" long syscall(long number, ...) {
  va_list args;
  va_start(args, number);
  long a[6];
  for (long& arg : a) {
    arg = va_arg(args, long);
  }
  va_end(args);
  if (number == SYS_close) {
    return close(static_cast<int>(a[0]));
  }
  using Syscall = long (*)(long, ...);
  static const auto real = reinterpret_cast<Syscall>(dlsym(RTLD_NEXT, "syscall"));
  return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
