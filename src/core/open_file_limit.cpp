#include "core/open_file_limit.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>

namespace trainwatch {

OpenFileLimit RaiseOpenFileLimit() {
  OpenFileLimit limit;
  rlimit now{};
  if (::getrlimit(RLIMIT_NOFILE, &now) != 0) {
    limit.error = std::strerror(errno);
    return limit;
  }
  limit.soft = now.rlim_cur;
  limit.hard = now.rlim_max;
  if (now.rlim_cur >= now.rlim_max) {
    return limit;
  }
  rlimit raised = now;
  raised.rlim_cur = now.rlim_max;
  // EPERM under a seccomp filter that denies setrlimit/prlimit64 (the shipped unit sets
  // LimitNOFILE instead, so there is nothing to raise there).
  if (::setrlimit(RLIMIT_NOFILE, &raised) != 0) {
    limit.error = std::strerror(errno);
    return limit;
  }
  limit.soft = raised.rlim_cur;
  return limit;
}

}  // namespace trainwatch
