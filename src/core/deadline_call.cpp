#include "core/deadline_call.h"

#include <atomic>

namespace trainwatch {
namespace {

// Process-wide on purpose: the threads left behind are the process's, whoever started them.
std::atomic<std::size_t> stuck_calls{0};

}  // namespace

std::size_t StuckDeadlineCalls() { return stuck_calls.load(); }

namespace deadline_call_detail {

bool MayStart() { return stuck_calls.load() < kMaxStuckCalls; }
void LeftBehind() { ++stuck_calls; }
void ReturnedLate() { --stuck_calls; }

}  // namespace deadline_call_detail
}  // namespace trainwatch
