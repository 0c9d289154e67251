// The answer to `trainwatch status --json` (and, read by the CLI, the human one): the
// daemon's snapshot as JSON. Pure function; any thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "ops/daemon_snapshot.h"

namespace trainwatch::ops {

nlohmann::json StatusJson(const DaemonSnapshot& snapshot);

}  // namespace trainwatch::ops
