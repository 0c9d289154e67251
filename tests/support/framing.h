// Test helper: frames a whole string into LineBatches and hands each to a callback, as a file
// read in one go would produce them. Header-only; test thread only.
#pragma once

#include <algorithm>
#include <cstring>
#include <string_view>

#include "source/line_framer.h"

namespace trainwatch::testing {

template <typename OnBatch>
void ForEachBatch(std::string_view text, OnBatch on_batch,
                  std::size_t max_line = source::kDefaultMaxLineBytes) {
  source::LineFramer framer(max_line, 64 * 1024);
  while (true) {
    auto space = framer.WritableSpace();
    const std::size_t n = std::min(space.size(), text.size());
    std::memcpy(space.data(), text.data(), n);
    framer.Commit(n);
    text.remove_prefix(n);
    while (const source::LineBatch* batch = framer.NextBatch(text.empty())) {
      on_batch(*batch);
    }
    if (text.empty()) {
      return;
    }
  }
}

}  // namespace trainwatch::testing
