#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/atomic_file.h"
#include "core/directory.h"
#include "core/file_system.h"
#include "core/trusted_path.h"
#include "core/unique_fd.h"
#include "core/untrusted_file.h"

namespace trainwatch {
namespace {

Error ErrnoError(const std::string& path) { return Error{path + ": " + std::strerror(errno)}; }

FileType TypeOfMode(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return FileType::kRegular;
    case S_IFDIR:
      return FileType::kDirectory;
    case S_IFLNK:
      return FileType::kSymlink;
    default:
      return FileType::kOther;
  }
}

FileType TypeOfEntry(unsigned char d_type) {
  switch (d_type) {
    case DT_REG:
      return FileType::kRegular;
    case DT_DIR:
      return FileType::kDirectory;
    case DT_LNK:
      return FileType::kSymlink;
    case DT_UNKNOWN:
      return FileType::kUnknown;
    default:
      return FileType::kOther;
  }
}

FileStatus StatusOf(const struct stat& info) {
  return {static_cast<std::uint64_t>(info.st_dev),
          static_cast<std::uint64_t>(info.st_ino),
          static_cast<std::uint64_t>(info.st_size),
          static_cast<std::uint64_t>(info.st_nlink),
          TypeOfMode(info.st_mode),
          info.st_uid,
          OthersMayWrite(info.st_mode, info.st_gid)};
}

// File systems whose changes inotify does not see (made on another host).
bool IsNetworkFileSystem(unsigned long type) {
  switch (type) {
    case 0x6969:      // NFS
    case 0x517B:      // SMB
    case 0xFF534D42:  // CIFS
    case 0xFE534D42:  // SMB2
    case 0x65735546:  // FUSE (sshfs, s3fs, gcsfuse...)
    case 0x00C36400:  // Ceph
    case 0x0BD00BD0:  // Lustre
    case 0x01021997:  // 9p (WSL, Docker Desktop shares)
    case 0x5346414F:  // AFS
    case 0x01161970:  // GFS2
    case 0x47504653:  // GPFS
      return true;
    default:
      return false;
  }
}

// An open file: read (any open), appended to (OpenForAppend's).
class PosixOpenFile final : public AppendableFile {
 public:
  PosixOpenFile(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}

  ::trainwatch::Status Append(std::string_view bytes) override {
    ssize_t n = 0;
    do {
      n = ::write(fd_.get(), bytes.data(), bytes.size());
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      return ErrnoError(path_);
    }
    if (static_cast<std::size_t>(n) != bytes.size()) {
      return Error{path_ + ": short write (disk full?)"};
    }
    return ::trainwatch::Status::Ok();
  }

  Result<FileStatus> Status() const override {
    struct stat info {};
    if (::fstat(fd_.get(), &info) != 0) {
      return ErrnoError(path_);
    }
    return StatusOf(info);
  }

  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<char> into) const override {
    while (true) {
      const ssize_t n = ::pread(fd_.get(), into.data(), into.size(), static_cast<off_t>(offset));
      if (n >= 0) {
        return static_cast<std::size_t>(n);
      }
      if (errno != EINTR) {
        return ErrnoError(path_);
      }
    }
  }

 private:
  UniqueFd fd_;
  std::string path_;
};

}  // namespace

Result<FileStatus> PosixFileSystem::Stat(const std::string& path, bool follow) const {
  struct stat info {};
  if ((follow ? ::stat(path.c_str(), &info) : ::lstat(path.c_str(), &info)) != 0) {
    return ErrnoError(path);
  }
  return StatusOf(info);
}

Result<std::string> PosixFileSystem::ResolvePath(const std::string& path) const {
  std::unique_ptr<char, decltype(&std::free)> resolved(::realpath(path.c_str(), nullptr),
                                                       &std::free);
  if (resolved == nullptr) {
    return ErrnoError(path);
  }
  return std::string(resolved.get());
}

Result<std::vector<DirEntry>> PosixFileSystem::List(const std::string& dir) const {
  DirPtr handle(::opendir(dir.c_str()));
  if (!handle) {
    return ErrnoError(dir);
  }
  std::vector<DirEntry> entries;
  while (const dirent* entry = ::readdir(handle.get())) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") {
      entries.push_back({std::string(name), TypeOfEntry(entry->d_type)});
    }
  }
  return entries;
}

Result<std::unique_ptr<ReadableFile>> PosixFileSystem::OpenForReading(
    const std::string& path) const {
  // A log's path is a user's to point anywhere: the object is checked before it is opened for
  // reading (core/untrusted_file.h), since opening some devices acts (/dev/watchdog arms a
  // reboot) and a FIFO blocks. A last link is followed: a log is often one, to the current run.
  UntrustedPath how;
  how.follow_last_link = true;
  Result<UniqueFd> fd = OpenUntrusted(path, how, O_RDONLY);
  if (!fd) {
    return fd.error();
  }
  return std::unique_ptr<ReadableFile>(std::make_unique<PosixOpenFile>(std::move(*fd), path));
}

Result<FileSystemKind> PosixFileSystem::KindOf(const std::string& dir) const {
  constexpr unsigned long kOverlayFs = 0x794c7630;
  struct statfs info {};
  if (::statfs(dir.c_str(), &info) != 0) {
    return ErrnoError(dir);
  }
  const auto type = static_cast<unsigned long>(info.f_type);
  if (IsNetworkFileSystem(type)) {
    return FileSystemKind::kNetwork;
  }
  return type == kOverlayFs ? FileSystemKind::kOverlay : FileSystemKind::kLocal;
}

Result<std::unique_ptr<AppendableFile>> PosixFileSystem::OpenForAppend(const std::string& path,
                                                                       unsigned mode) const {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, mode));
  if (fd.get() < 0) {
    return ErrnoError(path);
  }
  return std::unique_ptr<AppendableFile>(std::make_unique<PosixOpenFile>(std::move(fd), path));
}

Status PosixFileSystem::ReplaceWhole(const std::string& path, std::string_view bytes,
                                     unsigned mode) const {
  return WriteFileAtomically(path, bytes, mode);
}

Status PosixFileSystem::RenameFile(const std::string& from, const std::string& to) const {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return ErrnoError(to);
  }
  return Status::Ok();
}

const FileSystem& RealFileSystem() {
  static const PosixFileSystem real;
  return real;
}

}  // namespace trainwatch
