// ArchiveWriter: a pax tar compressed with zstd, written member by member to a descriptor the
// caller owns (the bundle's partial file). Separate so that libarchive's handles, its write
// callback and its error reporting live in one file and WriteBundle reads as its steps; no
// other file includes <archive.h> to write. ArchiveMember keeps each member to the size its
// header announced. One thread per writer; several writers may run at once.
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

struct archive;

namespace trainwatch::bundle {

struct ArchiveLibrary;  // bundle/archive_library.h

// One member's data: never more than the size announced in its header, and padded with
// newlines up to it, so a file that changed between the bundle writer's two passes can never
// corrupt the archive. REQUIRES: used only until the next AddMember or Close of its writer.
class ArchiveMember {
 public:
  ArchiveMember(const ArchiveLibrary* api, struct archive* archive, std::uint64_t size)
      : api_(api), archive_(archive), size_(size) {}
  // Writes what fits in the announced size. False when the archive refused data (the output
  // failed), never because `data` was too long.
  bool Write(std::string_view data);
  // Whether it was handed more than its announced size (the file grew between the passes).
  bool cut() const { return cut_; }
  std::uint64_t written() const { return written_; }
  // Fills the rest of the announced size with newlines (the file shrank or vanished).
  bool Pad();

 private:
  const ArchiveLibrary* api_;
  struct archive* archive_;
  std::uint64_t size_;
  std::uint64_t written_ = 0;
  bool cut_ = false;
};

class ArchiveWriter {
 public:
  // REQUIRES: `fd` stays open until this object is gone: freeing an archive that was not
  // closed still flushes to it.
  explicit ArchiveWriter(int fd);
  // libarchive keeps a pointer to output_.
  ArchiveWriter(const ArchiveWriter&) = delete;
  ArchiveWriter& operator=(const ArchiveWriter&) = delete;
  ~ArchiveWriter();

  // pax tar through zstd at `level`; `threads` > 1 asks zstd for workers where libarchive can
  // (silently one elsewhere). False, with ErrorText(), on a level zstd refuses, or when
  // libarchive cannot be loaded.
  bool SetUp(int level, int threads);
  bool Open();
  // Starts a regular member (mode 0600, our uid and gid) announced as `size` bytes; its data
  // goes through the ArchiveMember. Nothing when the archive refused the header.
  std::optional<ArchiveMember> AddMember(const std::string& path, std::uint64_t size,
                                         std::time_t mtime);
  // Writes the last frame; the bundle is whole once this returns true.
  bool Close();

  // Compressed bytes written to the descriptor so far.
  std::uint64_t bytes() const { return output_.bytes; }
  // Why the last call failed: the output's errno (libarchive's own fd writer reduces it to
  // "Write error", hence our callback), else libarchive's message, else errno.
  std::string ErrorText() const;

 private:
  struct Output {
    int fd = -1;
    std::uint64_t bytes = 0;
    int error = 0;
    bool WriteAll(const void* buffer, std::size_t length);
  };
  struct ArchiveFree {
    const ArchiveLibrary* api;  // no initializer here: it would keep unique_ptr's default
                                // constructor out until the enclosing class is complete
    void operator()(struct archive* archive) const;
  };

  const ArchiveLibrary* api_ = nullptr;  // null: libarchive could not be loaded
  std::string unavailable_;              // why not
  Output output_;
  std::unique_ptr<struct archive, ArchiveFree> archive_;
};

}  // namespace trainwatch::bundle
