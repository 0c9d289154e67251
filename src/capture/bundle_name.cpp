#include "capture/bundle_name.h"

#include <cctype>

#include "core/time_format.h"

namespace trainwatch::capture {
namespace {

std::string SafeName(std::string text) {
  for (char& c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') {
      c = '-';
    }
  }
  return text.substr(0, 64);
}

}  // namespace

std::string BundleFileName(const detect::Incident& incident, const std::string& host) {
  const std::string rule = incident.rules.empty() ? "none" : incident.rules.front();
  return FormatUtc(incident.opened, TimeFormat::kCompact) + "_" + SafeName(host) + "_" +
         SafeName(rule) + "_" + SafeName(incident.id) + ".tar.zst";
}

}  // namespace trainwatch::capture
