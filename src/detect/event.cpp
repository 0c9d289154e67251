#include "detect/event.h"

#include <algorithm>

namespace trainwatch::detect {

std::string EventText(std::string_view segment, std::size_t end_hint, bool& cut) {
  if (segment.size() <= kMaxEventTextBytes) {
    return std::string(segment);
  }
  cut = true;
  // Keep a little text after the match end and the rest before it: the message leads up to
  // the words that matched.
  constexpr std::size_t kAfter = 256;
  const std::size_t end =
      std::min(segment.size(), std::max(end_hint, kMaxEventTextBytes - kAfter) + kAfter);
  return std::string(segment.substr(end - kMaxEventTextBytes, kMaxEventTextBytes));
}

}  // namespace trainwatch::detect
