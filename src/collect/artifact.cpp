#include "collect/artifact.h"

namespace trainwatch::collect {

const char* CollectorStatusName(CollectorStatus status) {
  switch (status) {
    case CollectorStatus::kOk:
      return "ok";
    case CollectorStatus::kFailed:
      return "failed";
    case CollectorStatus::kMissing:
      return "missing";
    case CollectorStatus::kTimedOut:
      return "timed_out";
    case CollectorStatus::kAbandoned:
      return "abandoned";
    case CollectorStatus::kSkipped:
      return "skipped";
  }
  return "unknown";
}

}  // namespace trainwatch::collect
