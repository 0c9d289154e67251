// Fuzzes the bundle manifest reader (`trainwatch bundles list/show`) on arbitrary archive
// bytes: a damaged or foreign file gets an error, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "bundle/bundle_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)trainwatch::bundle::ReadManifestFromMemory(
      std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.tar.zst");
  return 0;
}
