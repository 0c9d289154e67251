#include "source/line_batch.h"

#include <algorithm>
#include <cstring>

namespace trainwatch::source {

std::size_t LineBatch::RecordAt(std::size_t offset) const {
  auto it = std::lower_bound(ends.begin(), ends.end(), offset);
  return std::min<std::size_t>(static_cast<std::size_t>(it - ends.begin()), ends.size() - 1);
}

std::string_view LineBatch::SegmentAt(std::size_t offset) const {
  const std::size_t record = RecordAt(offset);
  const std::size_t begin = Begin(record);
  const std::size_t end = ends[record];
  offset = std::clamp(offset, begin, end);
  const char* data = text.data();
  const void* next = std::memchr(data + offset, '\n', end - offset);
  const std::size_t segment_end = next ? static_cast<const char*>(next) - data : end;
  const void* prev = offset > begin ? memrchr(data + begin, '\n', offset - begin) : nullptr;
  const std::size_t segment_begin = prev ? static_cast<const char*>(prev) - data + 1 : begin;
  return text.substr(segment_begin, segment_end - segment_begin);
}

std::string_view LineBatch::LastSegment(std::size_t i) const {
  std::string_view record = Record(i);
  while (!record.empty() && record.back() == '\n') {
    record.remove_suffix(1);  // "text\r\n" (CRLF) or a bar that ends in '\r'
  }
  const std::size_t newline = record.rfind('\n');
  return newline == std::string_view::npos ? record : record.substr(newline + 1);
}

}  // namespace trainwatch::source
