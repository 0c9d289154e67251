// Fuzzes the incident-log reader (what a restarted daemon reads back from incidents.jsonl):
// a damaged or hand-edited log must never stop the daemon from starting.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ops/incident_log.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)trainwatch::ops::ParseIncidentHistory(
      std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
