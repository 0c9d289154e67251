#include "cli/event_format.h"

#include <nlohmann/json.hpp>

namespace trainwatch::cli {
namespace {

// Long enough for any real error line, short enough that a 64 KiB progress line does not
// flood a terminal.
constexpr std::size_t kTextColumns = 240;

std::string Shorten(const std::string& text) {
  std::string out = text.size() > kTextColumns ? text.substr(0, kTextColumns) + "..." : text;
  for (char& c : out) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 && c != '\t') {
      c = '?';  // control bytes (NUL, escape) must not reach the terminal
    }
  }
  return out;
}

}  // namespace

void PrintEvent(std::ostream& out, EventFormat format, const std::string& file,
                const detect::Event& event) {
  if (format == EventFormat::kJsonLines) {
    nlohmann::json json = {{"file", file},
                           {"line", event.line},
                           {"rule", event.rule_id},
                           {"kind", rules::RuleKindName(event.kind)},
                           {"text", event.text},
                           {"cut", event.cut},
                           {"cause", rules::CauseName(event.verdict.cause)},
                           {"action", rules::ActionName(event.verdict.action)}};
    if (!event.summary.empty()) {
      json["summary"] = event.summary;
      json["summary_line"] = event.summary_line;
    }
    out << json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    return;
  }
  out << file << ':' << event.line << ": " << rules::RuleKindName(event.kind) << ' '
      << event.rule_id << ": " << Shorten(event.text) << (event.cut ? " [line cut]" : "") << '\n';
  if (!event.summary.empty()) {
    out << "    -> " << Shorten(event.summary);
    if (event.summary_line != 0 && event.summary_line != event.line) {
      out << " (line " << event.summary_line << ')';
    }
    out << '\n';
  }
}

}  // namespace trainwatch::cli
