#include "core/printable.h"

#include <algorithm>

namespace trainwatch {
namespace {

void Escape(std::string& out, unsigned value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  out += "\\x";
  out += kDigits[(value >> 4) & 0xf];
  out += kDigits[value & 0xf];
}

}  // namespace

std::string Printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      Escape(out, c);
    } else if (c == 0xc2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      Escape(out, static_cast<unsigned char>(text[++i]));  // a C1 control (CSI is 0x9b)
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string ShownUrl(std::string_view url) {
  const std::size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) {
    return std::string(url);
  }
  const std::size_t authority = scheme + 3;
  const std::size_t end = std::min(url.find_first_of("/?#", authority), url.size());
  const std::size_t at = url.rfind('@', end);
  if (at == std::string_view::npos || at < authority) {
    return std::string(url);
  }
  const std::size_t colon = url.find(':', authority);
  if (colon == std::string_view::npos || colon > at) {
    return std::string(url);
  }
  return std::string(url.substr(0, colon + 1)) + "***" + std::string(url.substr(at));
}

}  // namespace trainwatch
