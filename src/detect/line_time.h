// When a log line says it was written: the time its logger put near its start. What `scan`
// orders a replayed log's firings by, so that a log of a crash loop over an hour replays as the
// daemon saw it live (an incident per crash, not one for the whole file). Reads the shapes
// training logs carry: ISO 8601 and Python logging ("2024-02-21T05:55:25.318312Z",
// "[2024-02-21 05:55:25,318]"), glog and absl ("E0221 05:55:25.318312 1234 file.cc:12]", whose
// year is not printed: the year given). Taken as UTC: a zone or offset is not applied, as only
// the distances between a log's lines matter. Pure; any thread.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace trainwatch::detect {

// Only this many bytes of a line's start are searched: a time further in is a message's, not
// the logger's.
inline constexpr std::size_t kLineTimeWindow = 96;

std::optional<std::chrono::system_clock::time_point> LineTime(std::string_view line,
                                                              int glog_year = 1970);

}  // namespace trainwatch::detect
