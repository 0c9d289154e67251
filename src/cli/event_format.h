// How `scan` prints events: a line per event for people, or JSON Lines for programs.
#pragma once

#include <ostream>
#include <string>

#include "detect/event.h"

namespace trainwatch::cli {

enum class EventFormat { kText, kJsonLines };

// Text: "FILE:LINE: KIND RULE: TEXT" (text shortened), then "  -> SUMMARY (line N)".
// JSON Lines: {"file","line","rule","kind","text","cut"[,"summary","summary_line"]}; bytes
// that are not UTF-8 are replaced, so every line is valid JSON.
void PrintEvent(std::ostream& out, EventFormat format, const std::string& file,
                const detect::Event& event);

}  // namespace trainwatch::cli
