#include "source/file_tail.h"

namespace trainwatch::source {
namespace {

// Up to `length` bytes from the start of `file`; shorter when the file is.
std::string ReadHead(const ReadableFile& file, std::size_t length) {
  std::string head(length, '\0');
  std::size_t got = 0;
  while (got < length) {
    const Result<std::size_t> n =
        file.ReadAt(got, std::span<char>(head.data() + got, length - got));
    if (!n || *n == 0) {
      break;
    }
    got += *n;
  }
  head.resize(got);
  return head;
}

}  // namespace

Fingerprint FingerprintOf(std::string_view head) {
  std::uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : head) {
    hash = (hash ^ c) * 1099511628211ull;
  }
  return {static_cast<std::uint32_t>(head.size()), hash};
}

std::optional<Fingerprint> ReadFingerprint(const ReadableFile& file, std::uint32_t length) {
  const std::string head = ReadHead(file, length);
  if (head.size() < length) {
    return std::nullopt;
  }
  return FingerprintOf(head);
}

FileTail::FileTail(std::string path, std::unique_ptr<ReadableFile> file, FileId id,
                   std::size_t chunk_bytes)
    : path_(std::move(path)),
      file_(std::move(file)),
      id_(id),
      chunk_bytes_(chunk_bytes),
      framer_(kDefaultMaxLineBytes, chunk_bytes) {}

Result<FileTail::Opened> FileTail::OpenRegular(const FileSystem& fs, const std::string& path) {
  Result<std::unique_ptr<ReadableFile>> file = fs.OpenForReading(path);
  if (!file) {
    return file.error();
  }
  Result<FileStatus> info = (*file)->Status();  // a regular file: FileSystem::OpenForReading
  if (!info) {
    return info.error();
  }
  return Opened{std::move(*file), FileId{info->device, info->inode}, info->size};
}

Result<FileTail> FileTail::Open(const FileSystem& fs, const std::string& path,
                                std::optional<TailPosition> start, std::size_t chunk_bytes) {
  Result<Opened> file = OpenRegular(fs, path);
  if (!file) {
    return file.error();
  }
  FileTail tail(path, std::move(file->file), file->id, chunk_bytes);
  const std::uint64_t size = file->size;
  TailPosition at = start.value_or(TailPosition{size, 1});
  if (at.offset > size) {
    at = TailPosition{};  // shorter than where we were: it was truncated while we were away
  }
  tail.read_offset_ = at.offset;
  tail.framer_.set_next_line(at.next_line);
  tail.head_ = FingerprintOf(ReadHead(*tail.file_, Fingerprint::kHeadBytes));
  return tail;
}

TailPosition FileTail::position() const {
  return {read_offset_ - framer_.pending_bytes(), framer_.lines_completed() + 1};
}

void FileTail::Restart() {
  before_truncation_ = position();
  framer_ = LineFramer(framer_.max_line_bytes(), chunk_bytes_);
  read_offset_ = 0;
  head_ = FingerprintOf({});
}

void FileTail::Drain(bool end_of_input, const Sink& sink) {
  while (true) {
    const std::uint64_t batch_offset = read_offset_ - framer_.pending_bytes();
    const LineBatch* batch = framer_.NextBatch(end_of_input);
    if (batch == nullptr) {
      return;
    }
    sink(*batch, batch_offset);
  }
}

trainwatch::Status FileTail::Reopen(const FileSystem& fs) {
  Result<Opened> file = OpenRegular(fs, path_);
  if (!file) {
    return file.error();
  }
  if (file->id != id_) {
    return Error{path_ + ": another file now (rotated or replaced)"};
  }
  file_ = std::move(file->file);
  return trainwatch::Status::Ok();
}

FileTail::ReadOutcome FileTail::Read(std::size_t budget, const Sink& sink) {
  ReadOutcome outcome;
  if (!file_) {
    outcome.error = path_ + ": not open (in turn)";
    return outcome;
  }
  const Result<FileStatus> info = file_->Status();
  if (!info) {
    outcome.error = info.error().message;
    return outcome;
  }
  const std::uint64_t size = info->size;
  // Both checks cost one small pread: a file truncated and refilled past our offset between
  // two reads (copytruncate under a busy writer) has a size that looks fine, but its first
  // bytes are no longer the ones we read.
  std::string head = ReadHead(*file_, Fingerprint::kHeadBytes);
  if (size < read_offset_ || !HeadMatches(head)) {
    Restart();
    outcome.truncated = true;
    if (stop_at_rewrite_) {
      outcome.stopped = true;
      return outcome;
    }
  }
  if (head.size() > head_.length) {
    head_ = FingerprintOf(head);
  }
  while (budget > 0) {
    std::span<char> space = framer_.WritableSpace();
    const std::size_t want = std::min(space.size(), budget);
    const Result<std::size_t> read = file_->ReadAt(read_offset_, space.first(want));
    if (!read) {
      outcome.error = read.error().message;
      break;
    }
    const std::size_t n = *read;
    if (n == 0) {
      break;
    }
    // The file may have been truncated and refilled between the check above and this read
    // (copytruncate under a busy writer): the bytes are only the file we know if its first
    // bytes still are. Otherwise they are dropped, uncommitted, and reading starts over.
    std::string now_head = ReadHead(*file_, Fingerprint::kHeadBytes);
    if (!StillTheSameFile(now_head, std::string_view(space.data(), n))) {
      if (outcome.truncated) {
        break;  // changing under us again: the next event or sweep comes back
      }
      Restart();
      outcome.truncated = true;
      if (stop_at_rewrite_) {
        outcome.stopped = true;
        return outcome;
      }
      continue;
    }
    if (now_head.size() > head_.length) {
      head_ = FingerprintOf(now_head);
    }
    framer_.Commit(n);
    read_offset_ += n;
    outcome.bytes += n;
    budget -= n;
    Drain(false, sink);
    if (budget == 0) {
      outcome.more = true;
    }
  }
  return outcome;
}

bool FileTail::HeadMatches(std::string_view head) const {
  return head.size() >= head_.length && FingerprintOf(head.substr(0, head_.length)) == head_;
}

bool FileTail::StillTheSameFile(std::string_view head, std::string_view data) const {
  if (!HeadMatches(head)) {
    return false;
  }
  // Bytes just read from inside the head region must be the head's own.
  for (std::uint64_t offset = read_offset_;
       offset < head.size() && offset - read_offset_ < data.size(); ++offset) {
    if (data[offset - read_offset_] != head[offset]) {
      return false;
    }
  }
  return true;
}

void FileTail::Flush(const Sink& sink) { Drain(true, sink); }

}  // namespace trainwatch::source
