// Fuzzes the progress parser on arbitrary segments: it must never throw, crash or overflow,
// and an update it returns has a key and a count that is not negative.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "detect/progress_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // The parser gets segments: split as the framer and detectors do.
  while (true) {
    const std::size_t stop = text.find_first_of("\r\n");
    const auto update = trainwatch::detect::ParseProgress(text.substr(0, stop));
    if (update && (update->key.empty() || update->count < 0)) {
      std::abort();
    }
    if (stop == std::string_view::npos) {
      break;
    }
    text.remove_prefix(stop + 1);
  }
  return 0;
}
