// The answer to `trainwatch status --json` (and, read by the CLI, the human one): the
// daemon's snapshot as JSON. Pure function; any thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "ops/daemon_snapshot.h"

namespace trainwatch::ops {

// A thread-pool worker busy this long is reported stuck (status's workers.stuck): no piece of
// the daemon's own pool work takes more than seconds.
inline constexpr std::int64_t kWorkerStuckSeconds = 60;

nlohmann::json StatusJson(const DaemonSnapshot& snapshot);

}  // namespace trainwatch::ops
