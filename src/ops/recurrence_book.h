// RecurrenceBook: which failures came back. Per fingerprint (detect/fingerprint.h): how many
// incidents had it, the first and the latest — restored from incidents.jsonl at start, so a
// crash loop across daemon restarts is still counted. Stamps each incident as it is written
// with its fingerprint and recurrence (what the retry policy makes of a failure that comes
// back is incident/retry_policy.h's). Bounded: kMaxFingerprints, the longest
// unseen forgotten first. Loop thread only.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "detect/incident.h"

namespace trainwatch::ops {

struct FingerprintSeen {
  std::uint32_t count = 0;
  detect::WallTime first{};
  detect::WallTime last{};
};

class RecurrenceBook {
 public:
  static constexpr std::size_t kMaxFingerprints = 10000;

  void Restore(std::map<std::string, FingerprintSeen> seen) { seen_ = std::move(seen); }
  // Sets incident.fingerprint and incident.recurrence, and counts it.
  void Stamp(detect::Incident& incident);

 private:
  std::map<std::string, FingerprintSeen> seen_;
};

// "1st", "2nd", "3rd", "11th"...
std::string Ordinal(std::uint32_t n);

// "; the 3rd time since 2026-11-25T09:12:00Z" for an incident seen before, else "".
std::string RecurrenceText(const detect::Recurrence& recurrence);

}  // namespace trainwatch::ops
