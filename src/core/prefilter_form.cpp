#include "core/prefilter_form.h"

namespace trainwatch {

std::optional<std::string> PrefilterForm(std::string_view regex, bool segmented, std::string* why) {
  // Hyperscan takes each expression as a C string: a NUL byte would cut the pattern short,
  // and a shortened pattern can miss what the whole one matches ("a\0|b" loses "b").
  if (regex.find('\0') != std::string_view::npos) {
    *why = "a NUL byte, which it cannot take";
    return std::nullopt;
  }
  // Hyperscan does not fold the case of bytes >= 0x80 as RE2's Latin-1 mode does ((?i)\xE9
  // matches "\xC9" in RE2 only), so a case-insensitive pattern that can name such bytes goes
  // to RE2 alone. Without case folding the two agree byte for byte, \pL included.
  bool high_bytes = false;
  bool caseless = false;
  std::string out;
  out.reserve(regex.size());
  for (std::size_t i = 0; i < regex.size(); ++i) {
    const char c = regex[i];
    high_bytes = high_bytes || static_cast<unsigned char>(c) >= 0x80;
    if (c == '\\' && i + 1 < regex.size() && regex[i + 1] == 'Q') {
      // \Q...\E quotes literally: copy it as it is, \A and \z inside stay letters.
      const std::size_t end = regex.find("\\E", i + 2);
      const std::size_t stop = end == std::string_view::npos ? regex.size() : end + 2;
      for (std::size_t k = i; k < stop; ++k) {
        high_bytes = high_bytes || static_cast<unsigned char>(regex[k]) >= 0x80;
      }
      out.append(regex.substr(i, stop - i));
      i = stop - 1;
      continue;
    }
    if (c == '\\' && i + 1 < regex.size()) {
      const char next = regex[++i];
      if (segmented && next == 'A') {
        out += '^';
      } else if (segmented && next == 'z') {
        out += '$';
      } else {
        out += c;
        out += next;
        // Escapes that can name a byte >= 0x80: \xE9, \x{E9}, octal \351, classes \pL.
        high_bytes = high_bytes || static_cast<unsigned char>(next) >= 0x80 || next == 'x' ||
                     next == 'p' || next == 'P' || (next >= '0' && next <= '7');
      }
      continue;
    }
    if (c == '(' && i + 1 < regex.size() && regex[i + 1] == '?') {
      // A flag group, "(?i)" "(?si:" "(?m-i)": note whether it turns case folding on.
      for (std::size_t k = i + 2; k < regex.size() && regex[k] != ')' && regex[k] != ':'; ++k) {
        if (regex[k] == '-') {
          break;
        }
        caseless = caseless || regex[k] == 'i';
      }
    }
    out += c;
  }
  if (high_bytes && caseless) {
    *why = "case-insensitive with non-ASCII bytes, which it would not fold";
    return std::nullopt;
  }
  return out;
}

}  // namespace trainwatch
