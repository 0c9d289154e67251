#include "source/line_framer.h"

#include <cstring>

namespace trainwatch::source {
namespace {

// Separators become '\n' so anchors and the segment helpers see progress updates as lines.
void CarriageReturnsToNewlines(char* begin, char* end) {
  while (begin < end) {
    void* cr = std::memchr(begin, '\r', static_cast<std::size_t>(end - begin));
    if (cr == nullptr) {
      return;
    }
    *static_cast<char*>(cr) = '\n';
    begin = static_cast<char*>(cr) + 1;
  }
}

}  // namespace

LineFramer::LineFramer(std::size_t max_line_bytes, std::size_t chunk_bytes)
    : max_line_bytes_(max_line_bytes == 0 ? 1 : max_line_bytes),
      capacity_(chunk_bytes + max_line_bytes_ + 1) {}

std::span<char> LineFramer::WritableSpace() {
  if (!buffer_) {
    buffer_ = std::make_unique_for_overwrite<char[]>(capacity_);
  }
  if (begin_ > 0) {
    // Pending bytes are a partial line shorter than the cap: cheap to move.
    std::memmove(buffer_.get(), buffer_.get() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  return {buffer_.get() + end_, capacity_ - end_};
}

void LineFramer::Release() {
  if (begin_ == end_) {
    buffer_.reset();
    begin_ = end_ = 0;
  }
}

void LineFramer::Commit(std::size_t n) { end_ += n; }

const LineBatch* LineFramer::Emit(std::size_t stop, std::size_t lines) {
  char* base = buffer_.get() + begin_;
  CarriageReturnsToNewlines(base, buffer_.get() + stop);
  batch_.text = std::string_view(base, stop - begin_);
  batch_.first_line = next_line_;
  batch_.cut = false;
  next_line_ += lines;
  begin_ = stop;
  return &batch_;
}

const LineBatch* LineFramer::EmitPiece(std::size_t length, bool last_piece, bool terminated) {
  char* base = buffer_.get() + begin_;
  if (!last_piece) {
    // Prefer to cut right after a '\r' so no progress update is split; the cut must be past
    // the first byte, or the piece would make no progress.
    const void* cr = memrchr(base + 1, '\r', length - 1);
    if (cr != nullptr) {
      length = static_cast<std::size_t>(static_cast<const char*>(cr) - base) + 1;
    }
  }
  CarriageReturnsToNewlines(base, base + length);
  const std::size_t consumed = length + (terminated ? 1 : 0);  // the '\n' is in text only
  batch_.ends.assign(1, static_cast<std::uint32_t>(length));
  batch_.text = std::string_view(base, consumed);
  batch_.first_line = next_line_;
  batch_.cut = true;
  begin_ += consumed;
  in_cut_line_ = !last_piece;
  if (last_piece) {
    ++next_line_;
  }
  return &batch_;
}

const LineBatch* LineFramer::NextBatch(bool end_of_input) {
  batch_.ends.clear();
  const char* data = buffer_.get();
  std::size_t pos = begin_;
  while (pos < end_) {
    const void* found = std::memchr(data + pos, '\n', end_ - pos);
    const bool terminated = found != nullptr;
    const std::size_t line_end = terminated ? static_cast<const char*>(found) - data : end_;
    const std::size_t length = line_end - pos;
    const bool complete = terminated || end_of_input;
    if (!complete && length <= max_line_bytes_) {
      break;  // a partial line that still fits: wait for the rest
    }
    // Here the line is complete, or longer than the cap: it goes out in pieces when it is
    // over the cap, or when earlier pieces of it went out already.
    if (length > max_line_bytes_ || in_cut_line_) {
      if (!batch_.ends.empty()) {
        break;  // deliver the plain lines first; the long one comes next call
      }
      if (length > max_line_bytes_) {
        return EmitPiece(max_line_bytes_, /*last_piece=*/false, /*terminated=*/false);
      }
      return EmitPiece(length, /*last_piece=*/true, terminated);
    }
    batch_.ends.push_back(static_cast<std::uint32_t>(line_end - begin_));
    pos = terminated ? line_end + 1 : line_end;
  }
  if (batch_.ends.empty()) {
    return nullptr;
  }
  return Emit(pos, batch_.ends.size());
}

}  // namespace trainwatch::source
