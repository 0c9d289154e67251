// Fuzzes the traceback grouper with arbitrary lines, a header wherever "Traceback" appears
// (as the python rules' header pattern would match). Checks memory stays bounded and every
// traceback comes out with its header line.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "detect/traceback_grouper.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  trainwatch::detect::TracebackGrouper grouper;
  std::vector<trainwatch::detect::Traceback> out;
  std::vector<std::string_view> before;  // nearest first
  std::uint64_t line = 1;
  std::size_t headers = 0;
  while (!text.empty()) {
    const std::size_t stop = text.find('\n');
    const std::string_view current = text.substr(0, stop);
    text.remove_prefix(stop == std::string_view::npos ? text.size() : stop + 1);
    std::optional<std::size_t> header_at;
    if (const std::size_t at = current.find("Traceback"); at != std::string_view::npos) {
      header_at = at;
      ++headers;
    }
    grouper.OnLine(line, current, header_at, std::span<const std::string_view>(before), out);
    before.insert(before.begin(), current);
    if (before.size() > trainwatch::detect::TracebackGrouper::kMarkerWindow) {
      before.pop_back();
    }
    const std::uint64_t earliest = grouper.EarliestOpenLine();
    if ((earliest == 0) == grouper.active() || earliest > line) {
      std::abort();
    }
    ++line;
  }
  grouper.CloseAll(out);
  if (grouper.active() || out.size() > headers) {
    std::abort();
  }
  for (const auto& traceback : out) {
    if (traceback.header_line == 0 || traceback.header_line >= line) {
      std::abort();
    }
  }
  return 0;
}
