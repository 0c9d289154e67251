#include "report/html_text.h"

#include <chrono>

#include "core/time_format.h"

namespace trainwatch::report {

std::string Escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string ClockOf(std::int64_t epoch_ms) {
  const std::string iso =
      FormatUtc(std::chrono::system_clock::time_point(std::chrono::milliseconds(epoch_ms)),
                TimeFormat::kIsoSeconds);
  return iso.size() >= 19 ? iso.substr(11, 8) : iso;  // "2026-11-25T09:12:03Z"
}

}  // namespace trainwatch::report
