// Fuzzes the /dev/kmsg record parser on arbitrary records: the line it makes never holds a
// '\n' (one record, one line) and always starts with the "[seconds.micros] " stamp when the
// record has a header.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "source/kmsg_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view record(reinterpret_cast<const char*>(data), size);
  const std::string line = trainwatch::source::KmsgRecordToLine(record);
  if (record.find(';') != std::string_view::npos &&
      (line.empty() || line.front() != '[' || line.find('\n') != std::string::npos)) {
    std::abort();
  }
  return 0;
}
