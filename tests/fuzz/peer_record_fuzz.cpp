// Fuzzes the peer record reader on arbitrary files from a hostile or broken peer: it never
// crashes, a record it accepts holds no control character in any text (what `trainwatch job`
// prints), and writing that record back reads back the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "cluster/peer_record.h"

namespace {

bool HasControl(std::string_view text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && byte != '\t') || byte == 0x7f) {
      return true;
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using trainwatch::cluster::ParsePeerRecord;
  using trainwatch::cluster::PeerRecordJson;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto record = ParsePeerRecord(text);
  if (!record.ok()) {
    return 0;
  }
  for (std::string_view field :
       {std::string_view(record->node), std::string_view(record->job_id),
        std::string_view(record->summary), std::string_view(record->verdict)}) {
    if (HasControl(field)) {
      std::abort();
    }
  }
  for (const auto& suspect : record->suspects) {
    if (HasControl(suspect.reason) || HasControl(suspect.label)) {
      std::abort();
    }
  }
  const auto again = ParsePeerRecord(PeerRecordJson(*record));
  if (!again.ok() || again->incident_id != record->incident_id || again->ranks != record->ranks ||
      again->uid != record->uid) {
    std::abort();
  }
  return 0;
}
