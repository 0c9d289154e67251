// Walking the pieces of a text between separators: lines of a tool's output ('\n'), entries
// of /proc/PID/environ or cmdline ('\0'). Pure; any thread.
#pragma once

#include <string_view>

namespace trainwatch {

// Calls `each(piece)` for every piece of `text` between `separator`s, in order; a final
// separator does not make an empty last piece.
template <typename Each>
void ForEachPiece(std::string_view text, char separator, Each each) {
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find(separator, at);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    each(text.substr(at, end - at));
    at = end + 1;
  }
}

}  // namespace trainwatch
