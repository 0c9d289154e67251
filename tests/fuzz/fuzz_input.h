// Fuzz helper: takes small parameters off the front of a libFuzzer input, leaving the rest as
// the text under test. Header-only; fuzz targets only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace trainwatch::fuzz {

class FuzzInput {
 public:
  FuzzInput(const std::uint8_t* data, std::size_t size)
      : rest_(reinterpret_cast<const char*>(data), size) {}

  // One byte off the front (0 once the input is used up).
  std::uint8_t TakeByte() {
    if (rest_.empty()) {
      return 0;
    }
    const auto byte = static_cast<std::uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    return byte;
  }
  std::string_view rest() const { return rest_; }

 private:
  std::string_view rest_;
};

}  // namespace trainwatch::fuzz
