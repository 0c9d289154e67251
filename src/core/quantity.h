// The human quantities operators write in rule and config files, and sizes as listings show them:
// durations ("500ms", "30s", "10m", "2h") and byte sizes ("64KiB", "100MiB", "2GiB").
// Pure functions; any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace trainwatch {

using Duration = std::chrono::milliseconds;

// Accepts a non-negative integer followed by one of ms, s, m, h, d. A bare number is
// refused: "30" could mean seconds or minutes, and guessing wrong hides a hang for hours.
Result<Duration> ParseDuration(std::string_view text);

// The other way, the shortest exact form a file would say: "2h", "30m", "90s", "1500ms".
std::string FormatDuration(Duration duration);

// Accepts a non-negative integer followed by B, KiB, MiB, GiB (binary) or KB, MB, GB
// (decimal). A bare number means bytes.
Result<std::uint64_t> ParseByteSize(std::string_view text);

// The other way, for people reading listings: "812 B", "1.5 KiB", "4.0 MiB".
std::string FormatByteSize(std::uint64_t bytes);

}  // namespace trainwatch
