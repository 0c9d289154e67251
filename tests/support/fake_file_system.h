// FakeFileSystem: an in-memory file system for unit tests of the tail set and the globs. Files
// are inodes with content and a link count; an open file keeps its inode, so it reads on after
// a rename or a delete, as on Linux. Each change is one call (the system call a writer or
// logrotate makes) and is reported to `on_change` as inotify would report it to a watch on the
// directory: a write as a change, a create, rename or delete as a rename. Test thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/file_system.h"

namespace trainwatch::testing {

class FakeFileSystem final : public FileSystem {
 public:
  static constexpr std::uint64_t kDevice = 2049;

  FakeFileSystem();

  // Creates `dir` and its parents.
  void MakeDirs(const std::string& dir);
  // Appends `text` to `path`, creating it (and its directory) first if it does not exist; with
  // `inode`, the new file takes that inode number (a deleted file's number reused).
  void Append(const std::string& path, std::string_view text,
              std::optional<std::uint64_t> inode = std::nullopt);
  // Creates `path` empty (or truncates it to nothing).
  void Create(const std::string& path, std::optional<std::uint64_t> inode = std::nullopt);
  void Truncate(const std::string& path, std::uint64_t size = 0);
  // rename(2): replaces `to` if it exists.
  void Rename(const std::string& from, const std::string& to);
  // unlink(2): the inode lives on while open.
  void Remove(const std::string& path);
  // Creates `to` as a new file holding the first `bytes` of `from` (all by default): a copy as
  // logrotate's copytruncate makes it, possibly still being written.
  void Copy(const std::string& from, const std::string& to,
            std::optional<std::uint64_t> bytes = std::nullopt);
  std::uint64_t InodeOf(const std::string& path) const;
  // symlink(2): `link` names `target` (relative to the link's directory unless absolute).
  // Stat, opens and writes through a link land on its target, whose own name the watches
  // hear (as inotify reports them).
  void Symlink(const std::string& target, const std::string& link);

  struct Inode;
  // A writer's open descriptor: it writes on to the same inode after a rename or a delete.
  std::shared_ptr<Inode> OpenForWriting(const std::string& path);
  // Appends through such a descriptor; reported only if the inode still has a name.
  void AppendHeld(const std::shared_ptr<Inode>& inode, std::string_view text);
  void SetKind(const std::string& dir, FileSystemKind kind) { kinds_[dir] = kind; }
  // Opens of `path` for reading fail with `error` (EMFILE: the process is out of
  // descriptors; EACCES...) until called again with 0.
  void FailOpens(const std::string& path, int error);
  // The daemon's own writes to `path` (appends, whole replacements, renames onto it) fail with
  // `error` (ENOSPC: the disk is full; EIO) until called again with 0; an append first writes
  // `partial` bytes of its record, as a short write on a full disk does.
  void FailWrites(const std::string& path, int error, std::size_t partial = 0);

  // What inotify would say: the directory, the entry's name, whether it was a rename.
  std::function<void(const std::string& dir, const std::string& name, bool renamed)> on_change;

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

  struct Inode {
    std::uint64_t number = 0;
    bool directory = false;
    std::string content;
    std::uint64_t links = 1;
    std::string link_target;  // a symlink: where it points
    uid_t owner = 0;          // root's, unless a test says otherwise
  };

 private:
  std::shared_ptr<Inode> Find(const std::string& path) const;
  // `path` with its final symlinks followed (at most 8, as a loop would go on forever).
  std::string Resolved(const std::string& path) const;
  std::shared_ptr<Inode>& NewFile(const std::string& path, std::optional<std::uint64_t> inode);
  void Notify(const std::string& path, bool renamed);

  std::map<std::string, std::shared_ptr<Inode>> entries_;  // absolute path → inode
  std::map<std::string, FileSystemKind> kinds_;
  std::map<std::string, int> failing_opens_;  // path -> errno
  struct FailingWrite {
    int error = 0;
    std::size_t partial = 0;
  };
  std::map<std::string, FailingWrite> failing_writes_;  // path -> how
  // The Env's file system is const (the real one has no state); the fake's writes change it.
  FakeFileSystem& Mutable() const { return const_cast<FakeFileSystem&>(*this); }  // NOLINT
  friend class FakeAppendableFile;
  std::uint64_t next_inode_ = 100;
};

}  // namespace trainwatch::testing
