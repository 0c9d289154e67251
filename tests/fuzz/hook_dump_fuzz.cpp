// Fuzzes the reader of what a rank's Python hook (faulthandler) wrote when signalled: a rank
// writes that file, so any bytes may be there. It must never crash, overflow or leak (ASan and
// UBSan watch), and the frames it reads are bounded by the text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "collect/stack_text.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::size_t frames = 0;
  for (const auto& thread : trainwatch::collect::ParseFaulthandler(text)) {
    frames += thread.frames.size();
  }
  if (frames > size) {  // every frame takes a line of its own
    std::abort();
  }
  return 0;
}
