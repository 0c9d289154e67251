// LineBatch: lines framed out of a byte stream, laid out for one multi-pattern scan.
// Produced by LineFramer (which owns the bytes; a batch is valid until the framer's next
// call), consumed by the matcher and detectors. Single thread.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace trainwatch::source {

// A line is the text between two '\n'. Inside a line, '\r' separates progress-bar updates
// (tqdm writes "\r 10%|...\r 20%|..."), so the framer turns every '\r' into '\n' in place:
// patterns then see each update as a *segment* of its own, and `^`/`$` work on segments.
// `ends` remembers where the real lines end, so line numbers still count '\n' only.
struct LineBatch {
  std::string_view text;
  // ends[i] is the offset one past the last byte of record i: the offset of its '\n', or of
  // the end of `text` for an unterminated final line or a piece of a cut line.
  std::vector<std::uint32_t> ends;
  std::uint64_t first_line = 1;  // 1-based number of record 0
  // True for a piece of a line longer than the cap: the batch then holds that one record,
  // and every piece of the line has the same line number.
  bool cut = false;

  std::size_t size() const { return ends.size(); }
  std::uint32_t Begin(std::size_t i) const { return i == 0 ? 0 : ends[i - 1] + 1; }
  std::uint64_t LineNumber(std::size_t i) const { return first_line + i; }
  std::string_view Record(std::size_t i) const { return text.substr(Begin(i), ends[i] - Begin(i)); }
  // The record that holds byte `offset` of `text`.
  std::size_t RecordAt(std::size_t offset) const;
  // The segment (text between separators) that holds byte `offset` of `text`; when that
  // byte is a separator, the segment it closes.
  std::string_view SegmentAt(std::size_t offset) const;
  // What a terminal would show for record i: its last non-empty segment.
  std::string_view LastSegment(std::size_t i) const;
};

}  // namespace trainwatch::source
