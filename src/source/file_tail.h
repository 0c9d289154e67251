// FileTail: reads one open file from an offset as it grows, framing lines for a sink, and
// notices when the file is truncated or rewritten (copytruncate) so no line is read from
// the middle of someone else's content. Keeps the descriptor open, so a renamed or deleted
// file is finished from the same inode. Knows nothing of loops: the owner calls Read() when
// the file may have grown. Single thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/file_system.h"
#include "core/result.h"
#include "source/file_id.h"
#include "source/line_batch.h"
#include "source/line_framer.h"

namespace trainwatch::source {

// The file's first bytes (up to kHeadBytes): with the FileId they tell a file we have read
// from an unrelated file that reuses its inode, and from a copy of it made by copytruncate.
struct Fingerprint {
  static constexpr std::size_t kHeadBytes = 256;
  std::uint32_t length = 0;  // how many bytes the hash covers
  std::uint64_t hash = 0;    // FNV-1a of those bytes
  bool operator==(const Fingerprint&) const = default;
};
Fingerprint FingerprintOf(std::string_view head);
// Reads the first `length` bytes of `file` and fingerprints them; nullopt when the file is
// now shorter than that.
std::optional<Fingerprint> ReadFingerprint(const ReadableFile& file, std::uint32_t length);

// Where reading resumes: the byte after the last complete line handed to the sink, and that
// line's successor's number.
struct TailPosition {
  std::uint64_t offset = 0;
  std::uint64_t next_line = 1;
};

class FileTail {
 public:
  // `batch_offset` is the file offset of the batch's first byte.
  using Sink = std::function<void(const LineBatch& batch, std::uint64_t batch_offset)>;

  // Opens `path` in `fs` for reading; at `start` when given, else at its end (rounded back to
  // no line: the end of a file is a line boundary for our purposes).
  static Result<FileTail> Open(const FileSystem& fs, const std::string& path,
                               std::optional<TailPosition> start, std::size_t chunk_bytes);
  static Result<FileTail> Open(const std::string& path, std::optional<TailPosition> start,
                               std::size_t chunk_bytes) {
    return Open(RealFileSystem(), path, start, chunk_bytes);
  }

  struct ReadOutcome {
    std::uint64_t bytes = 0;
    bool more = false;       // stopped at the budget with more to read
    bool truncated = false;  // the content was replaced; reading restarted at 0 (see below)
    // With stop_at_rewrite: truncated, and nothing read of the new content; the owner decides
    // where to read it from.
    bool stopped = false;
    std::string error;  // why the read failed (logged by the owner); empty if it did not
  };
  // Reads up to `budget` bytes, handing complete lines to `sink`. When the file shrank below
  // the read offset or its first bytes changed, the pending partial line is dropped,
  // `truncated` is set with `before_truncation` holding where it was, and reading starts
  // over at 0 with line 1.
  ReadOutcome Read(std::size_t budget, const Sink& sink);
  // Hands over an unterminated last line (the file is finished: renamed away and quiet, or
  // deleted).
  void Flush(const Sink& sink);

  const std::string& path() const { return path_; }
  void set_path(std::string path) { path_ = std::move(path); }
  FileId id() const { return id_; }
  // The file this one is a copytruncate copy of, continuing its lines (and their numbers):
  // lines that fired from the original before a restart must not fire again from the copy.
  const std::optional<FileId>& copy_of() const { return copy_of_; }
  void set_copy_of(FileId original) { copy_of_ = original; }
  // A file rewritten in place (a rotated copy made over the old copy: same inode, new content)
  // may be a copy of what was read elsewhere: Read stops at the rewrite instead of reading the
  // new content from its start.
  void set_stop_at_rewrite(bool stop) { stop_at_rewrite_ = stop; }
  // The open file's status now (its size, and links: 0 once it is deleted); an error while
  // released.
  Result<FileStatus> Status() const {
    return file_ ? file_->Status() : Result<FileStatus>(Error{path_ + ": not open (in turn)"});
  }
  // Closes the descriptor, keeping where reading stands (offset, the unfinished last line, line
  // numbers): a file past the descriptor budget is read in turn, opened only for its turn.
  void Release() { file_.reset(); }
  bool released() const { return file_ == nullptr; }
  // Opens `path` again for a turn; fails when it is gone or is another file now (its id).
  trainwatch::Status Reopen(const FileSystem& fs);
  // The fingerprint of its first `length` bytes now; nullopt when it is shorter.
  std::optional<Fingerprint> HeadFingerprint(std::uint32_t length) const {
    return ReadFingerprint(*file_, length);
  }
  Fingerprint fingerprint() const { return head_; }
  // Where a restart must resume so that no line is lost and none repeated.
  TailPosition position() const;
  TailPosition before_truncation() const { return before_truncation_; }
  std::uint64_t read_offset() const { return read_offset_; }
  // The unfinished last line (see LineFramer::PendingText).
  std::string_view pending() const { return framer_.PendingText(); }
  // Frees the framing buffer while the file is quiet.
  void Idle() { framer_.Release(); }

 private:
  // `path` opened for reading, once it is a regular file; its id and size then.
  struct Opened {
    std::unique_ptr<ReadableFile> file;
    FileId id;
    std::uint64_t size = 0;
  };
  static Result<Opened> OpenRegular(const FileSystem& fs, const std::string& path);

  FileTail(std::string path, std::unique_ptr<ReadableFile> file, FileId id,
           std::size_t chunk_bytes);
  void Restart();
  // Whether `data`, just read at read_offset_, comes from the file we have been reading, given
  // its first bytes `head` read right after.
  bool StillTheSameFile(std::string_view head, std::string_view data) const;
  // Whether `head` (the first bytes now) begins with the bytes head_ fingerprints.
  bool HeadMatches(std::string_view head) const;
  void Drain(bool end_of_input, const Sink& sink);

  std::string path_;
  std::unique_ptr<ReadableFile> file_;
  FileId id_;
  std::optional<FileId> copy_of_;
  std::size_t chunk_bytes_;
  LineFramer framer_;
  std::uint64_t read_offset_ = 0;
  // The first bytes read from offset 0 (up to kHeadBytes), as their fingerprint: 16 bytes per
  // followed file where the bytes themselves took 257 on the heap.
  Fingerprint head_ = FingerprintOf({});
  bool stop_at_rewrite_ = false;
  TailPosition before_truncation_;
};

}  // namespace trainwatch::source
