// Text into HTML: every string a report shows comes from logs, tools and job environments,
// so each is escaped where it is put, in text and in attribute values alike. Pure; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace trainwatch::report {

// & < > " ' as character references.
std::string Escape(std::string_view text);

// "09:12:03" (UTC) of milliseconds since the epoch.
std::string ClockOf(std::int64_t epoch_ms);

}  // namespace trainwatch::report
