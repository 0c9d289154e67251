// LineFramer: turns a byte stream into LineBatches with bounded memory. The caller reads
// into WritableSpace(), Commit()s, then drains NextBatch() until it returns null.
// A line longer than the cap is never held whole: it is delivered in pieces of at most the
// cap, cut after the last '\r' that fits when there is one (so progress updates stay whole),
// each flagged `cut`. NUL bytes and invalid UTF-8 are just bytes. Single thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "source/line_batch.h"

namespace trainwatch::source {

inline constexpr std::size_t kDefaultMaxLineBytes = 64 * 1024;
inline constexpr std::size_t kDefaultChunkBytes = 1024 * 1024;

class LineFramer {
 public:
  explicit LineFramer(std::size_t max_line_bytes = kDefaultMaxLineBytes,
                      std::size_t chunk_bytes = kDefaultChunkBytes);

  // Free space after the pending bytes; never empty. Invalidates the last batch.
  std::span<char> WritableSpace();
  // REQUIRES: n <= WritableSpace().size().
  void Commit(std::size_t n);

  // The next batch of complete lines (or one piece of an over-long line), or null when more
  // input is needed. With `end_of_input`, an unterminated last line is delivered too.
  // The batch is valid until the next call on this framer.
  const LineBatch* NextBatch(bool end_of_input = false);

  std::uint64_t lines_completed() const { return next_line_ - 1; }
  std::size_t max_line_bytes() const { return max_line_bytes_; }
  // Bytes committed but not yet delivered (the start of an unfinished line). A tailer's
  // durable offset is its read offset minus these.
  std::size_t pending_bytes() const { return end_ - begin_; }
  // Those bytes, as read ('\r' not yet turned into '\n'): a tqdm bar written to a file
  // has no '\n' until the bar closes, yet each of its refreshes is news for a stall detector.
  std::string_view PendingText() const {
    return buffer_ ? std::string_view(buffer_.get() + begin_, end_ - begin_) : std::string_view();
  }
  // Resumes numbering (a tailer restarting mid-file). REQUIRES: nothing pending.
  void set_next_line(std::uint64_t line) { next_line_ = line; }
  // Frees the buffer when nothing is pending: a daemon tailing a hundred quiet files should
  // not hold a megabyte for each. The next WritableSpace() allocates again.
  void Release();

 private:
  const LineBatch* EmitPiece(std::size_t length, bool last_piece, bool terminated);
  const LineBatch* Emit(std::size_t stop, std::size_t lines);

  std::size_t max_line_bytes_;
  std::size_t capacity_;
  std::unique_ptr<char[]> buffer_;  // allocated on first use, uninitialised
  std::size_t begin_ = 0;           // first byte not yet delivered
  std::size_t end_ = 0;             // one past the last byte read
  std::uint64_t next_line_ = 1;
  bool in_cut_line_ = false;  // earlier pieces of the current line were delivered
  LineBatch batch_;
};

}  // namespace trainwatch::source
