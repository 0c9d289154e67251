#include "core/usable_cores.h"

#include <sched.h>

#include <algorithm>

namespace trainwatch {

int UsableCores() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    return 1;
  }
  return std::max(1, CPU_COUNT(&allowed));
}

}  // namespace trainwatch
