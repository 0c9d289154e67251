#include "ops/prometheus_text.h"

#include <cmath>
#include <cstdio>
#include <set>
#include <string_view>

namespace trainwatch::ops {
namespace {

// The length of the valid UTF-8 sequence at the start of `text`, 0 if it is not one.
std::size_t Utf8SequenceLength(std::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  std::uint32_t minimum = 0;
  if (lead < 0x80) {
    return 1;
  } else if ((lead & 0xE0) == 0xC0) {
    length = 2, minimum = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, minimum = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, minimum = 0x10000;
  } else {
    return 0;
  }
  if (text.size() < length) {
    return 0;
  }
  std::uint32_t code = lead & (0x7F >> length);
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) {
      return 0;
    }
    code = (code << 6) | (byte(i) & 0x3F);
  }
  const bool surrogate = code >= 0xD800 && code <= 0xDFFF;
  return code < minimum || code > 0x10FFFF || surrogate ? 0 : length;
}

// Label values escape backslash, double quote and newline; HELP text backslash and newline.
// Both must be UTF-8, or the textfile collector rejects the whole file: a log's bytes (a
// bar's label, a file name) that are not become U+FFFD.
std::string Escape(const std::string& text, bool quote) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = Utf8SequenceLength(std::string_view(text).substr(i));
    if (length == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    if (length > 1) {
      out.append(text, i, length);
      i += length;
      continue;
    }
    const char c = text[i++];
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Number(double value) {
  if (std::isnan(value)) {
    return "NaN";
  }
  if (std::isinf(value)) {
    return value > 0 ? "+Inf" : "-Inf";
  }
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return std::to_string(static_cast<long long>(value));
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

}  // namespace

std::string PrometheusText(const std::vector<MetricFamily>& families) {
  std::string out;
  for (const MetricFamily& family : families) {
    if (family.samples.empty()) {
      continue;
    }
    out += "# HELP " + family.name + " " + Escape(family.help, false) + "\n";
    out += "# TYPE " + family.name + " " + family.type + "\n";
    std::set<std::string> seen;  // a series twice makes the file invalid: the first one counts
    for (const MetricSample& sample : family.samples) {
      std::string series = family.name;
      if (!sample.labels.empty()) {
        series += "{";
        for (std::size_t i = 0; i < sample.labels.size(); ++i) {
          series += (i ? "," : "") + sample.labels[i].first + "=\"" +
                    Escape(sample.labels[i].second, true) + "\"";
        }
        series += "}";
      }
      if (seen.insert(series).second) {
        out += series + " " + Number(sample.value) + "\n";
      }
    }
  }
  return out;
}

}  // namespace trainwatch::ops
