// The one way trainwatch writes a point in time: UTC, so records from hosts in different time
// zones sort together. Used by incident records, bundle manifests and names, incident ids,
// collector listings and JSON log lines. Pure functions; any thread.
#pragma once

#include <chrono>
#include <string>

namespace trainwatch {

enum class TimeFormat {
  kIsoSeconds,  // "2024-05-01T12:00:00Z"
  kIsoMillis,   // "2024-05-01T12:00:00.123Z"
  kCompact,     // "20240501T120000Z": file names and ids
};

std::string FormatUtc(std::chrono::system_clock::time_point time,
                      TimeFormat format = TimeFormat::kIsoMillis);

}  // namespace trainwatch
