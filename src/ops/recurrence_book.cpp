#include "ops/recurrence_book.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/time_format.h"
#include "detect/fingerprint.h"

namespace trainwatch::ops {

std::string Ordinal(std::uint32_t n) {
  const std::uint32_t tens = n % 100;
  const char* suffix = (tens >= 11 && tens <= 13) ? "th"
                       : n % 10 == 1              ? "st"
                       : n % 10 == 2              ? "nd"
                       : n % 10 == 3              ? "rd"
                                                  : "th";
  return std::to_string(n) + suffix;
}

void RecurrenceBook::Stamp(detect::Incident& incident) {
  incident.fingerprint = detect::Fingerprint(incident);
  if (seen_.size() >= kMaxFingerprints && !seen_.contains(incident.fingerprint)) {
    seen_.erase(std::min_element(seen_.begin(), seen_.end(), [](const auto& a, const auto& b) {
      return a.second.last < b.second.last;
    }));
  }
  FingerprintSeen& seen = seen_[incident.fingerprint];
  incident.recurrence.count = seen.count + 1;
  incident.recurrence.first = seen.count > 0 ? seen.first : incident.opened;
  incident.recurrence.previous = seen.count > 0 ? seen.last : detect::WallTime{};
  if (seen.count == 0) {
    seen.first = incident.opened;
  }
  ++seen.count;
  seen.last = std::max(seen.last, incident.opened);
}

std::string RecurrenceText(const detect::Recurrence& recurrence) {
  if (recurrence.count <= 1) {
    return {};
  }
  return fmt::format("; the {} time since {}", Ordinal(recurrence.count),
                     FormatUtc(recurrence.first, TimeFormat::kIsoSeconds));
}

}  // namespace trainwatch::ops
