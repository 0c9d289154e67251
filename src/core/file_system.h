// FileSystem: the file system queries the tail set, the globs and the writer scan make — stat,
// list a directory, open a file for reading, what kind of file system holds a directory —
// behind one interface, so that rotation, copytruncate and inode reuse can be stepped through
// one event at a time in unit tests (tests/support/fake_env.h). PosixFileSystem is the real
// one: plain POSIX calls, no exceptions, stateless, so any thread may use it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace trainwatch {

enum class FileType { kRegular, kDirectory, kSymlink, kOther, kUnknown };

struct FileStatus {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  std::uint64_t size = 0;
  std::uint64_t links = 1;  // 0 once the file is deleted (while still open)
  FileType type = FileType::kRegular;
  // Its owner: who wrote what it holds (a log's owner is the user its lines speak for)...
  std::optional<uid_t> owner;
  // ...unless others may write it (o+w, or g+w for a group other than root's): then its lines
  // speak for no one in particular.
  bool anyone_may_write = false;
};

struct DirEntry {
  std::string name;
  FileType type = FileType::kUnknown;  // kUnknown where the file system does not say
};

// What holds a directory, for deciding whether inotify sees its changes.
enum class FileSystemKind {
  kLocal,
  kNetwork,  // changes made on another host: inotify sees nothing (NFS, FUSE, Lustre...)
  kOverlay,  // inotify sees writes through this mount, not those made to its layers
};

// An open file: it stays readable, whole, after it is renamed or deleted.
class ReadableFile {
 public:
  virtual ~ReadableFile() = default;
  virtual Result<FileStatus> Status() const = 0;
  // Up to `into.size()` bytes at `offset`; 0 at the end of the file.
  virtual Result<std::size_t> ReadAt(std::uint64_t offset, std::span<char> into) const = 0;
};

// A file open for appending whole records (incidents.jsonl): each Append is one write(2) at its
// end (O_APPEND), so that no reader sees half a record interleaved with another writer's.
class AppendableFile : public ReadableFile {
 public:
  // All of `bytes` in one write. A short one (a full disk) is an error: what it wrote stays.
  virtual ::trainwatch::Status Append(std::string_view bytes) = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // `follow`: through a final symlink (stat) or not (lstat).
  virtual Result<FileStatus> Stat(const std::string& path, bool follow = true) const = 0;
  // The entries of `dir` but "." and "..", in no particular order.
  virtual Result<std::vector<DirEntry>> List(const std::string& dir) const = 0;
  // A regular file, its last link followed (no /proc magic link); anything else (a FIFO, a
  // device, a directory) is refused before it is opened for reading.
  virtual Result<std::unique_ptr<ReadableFile>> OpenForReading(const std::string& path) const = 0;
  virtual Result<FileSystemKind> KindOf(const std::string& dir) const = 0;
  // The path `path` names once every symlink in it is followed (realpath(3)): where a log
  // reached through a link really is, and so which directory reports its writes.
  virtual Result<std::string> ResolvePath(const std::string& path) const = 0;

  // What the daemon writes of its own (incidents.jsonl, alerts.json, the saved offsets, the
  // outbox) goes through these too, so that tests can fill the disk or fail it.
  // Opens `path` for appending, creating it with `mode` when it is not there.
  virtual Result<std::unique_ptr<AppendableFile>> OpenForAppend(const std::string& path,
                                                                unsigned mode) const = 0;
  // Replaces `path` whole through `path`.tmp and a rename (core/atomic_file.h): a reader sees
  // the old content or the new, never half; a failure leaves the old and no temporary.
  virtual Status ReplaceWhole(const std::string& path, std::string_view bytes,
                              unsigned mode) const = 0;
  // rename(2): replaces `to` if it exists.
  virtual Status RenameFile(const std::string& from, const std::string& to) const = 0;
};

class PosixFileSystem final : public FileSystem {
 public:
  Result<FileStatus> Stat(const std::string& path, bool follow = true) const override;
  Result<std::vector<DirEntry>> List(const std::string& dir) const override;
  Result<std::unique_ptr<ReadableFile>> OpenForReading(const std::string& path) const override;
  Result<FileSystemKind> KindOf(const std::string& dir) const override;
  Result<std::string> ResolvePath(const std::string& path) const override;
  Result<std::unique_ptr<AppendableFile>> OpenForAppend(const std::string& path,
                                                        unsigned mode) const override;
  Status ReplaceWhole(const std::string& path, std::string_view bytes,
                      unsigned mode) const override;
  Status RenameFile(const std::string& from, const std::string& to) const override;
};

// The machine's file system, for callers given none.
const FileSystem& RealFileSystem();

}  // namespace trainwatch
