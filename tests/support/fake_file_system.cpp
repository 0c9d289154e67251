#include "support/fake_file_system.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace trainwatch::testing {
namespace {

std::string ParentOf(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

std::string NameOf(const std::string& path) { return path.substr(path.rfind('/') + 1); }

FileType TypeOf(const FakeFileSystem::Inode& inode) {
  if (!inode.link_target.empty()) {
    return FileType::kSymlink;
  }
  return inode.directory ? FileType::kDirectory : FileType::kRegular;
}

class FakeReadableFile final : public ReadableFile {
 public:
  explicit FakeReadableFile(std::shared_ptr<FakeFileSystem::Inode> inode)
      : inode_(std::move(inode)) {}

  Result<FileStatus> Status() const override {
    return FileStatus{FakeFileSystem::kDevice,
                      inode_->number,
                      inode_->content.size(),
                      inode_->links,
                      inode_->directory ? FileType::kDirectory : FileType::kRegular,
                      inode_->owner,
                      false};
  }

  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<char> into) const override {
    if (offset >= inode_->content.size()) {
      return std::size_t{0};
    }
    const std::size_t n = std::min<std::size_t>(into.size(), inode_->content.size() - offset);
    std::copy_n(inode_->content.data() + offset, n, into.data());
    return n;
  }

 private:
  std::shared_ptr<FakeFileSystem::Inode> inode_;
};

}  // namespace

FakeFileSystem::FakeFileSystem() {
  auto root = std::make_shared<Inode>();
  root->number = 2;
  root->directory = true;
  entries_["/"] = root;
}

std::shared_ptr<FakeFileSystem::Inode> FakeFileSystem::Find(const std::string& path) const {
  auto found = entries_.find(path);
  return found == entries_.end() ? nullptr : found->second;
}

std::string FakeFileSystem::Resolved(const std::string& path) const {
  std::string at = path;
  for (int hops = 0; hops < 8; ++hops) {
    std::shared_ptr<Inode> entry = Find(at);
    if (entry == nullptr || entry->link_target.empty()) {
      return at;
    }
    at = entry->link_target.front() == '/' ? entry->link_target
                                           : ParentOf(at) + "/" + entry->link_target;
  }
  return at;
}

void FakeFileSystem::Symlink(const std::string& target, const std::string& link) {
  MakeDirs(ParentOf(link));
  auto made = std::make_shared<Inode>();
  made->number = next_inode_++;
  made->link_target = target;
  entries_[link] = made;
  Notify(link, true);
}

Result<std::string> FakeFileSystem::ResolvePath(const std::string& path) const {
  const std::string resolved = Resolved(path);
  if (Find(resolved) == nullptr) {
    return Error{path + ": No such file or directory"};
  }
  return resolved;
}

void FakeFileSystem::Notify(const std::string& path, bool renamed) {
  if (on_change) {
    on_change(ParentOf(path), NameOf(path), renamed);
  }
}

void FakeFileSystem::MakeDirs(const std::string& dir) {
  if (dir.empty() || Find(dir) != nullptr) {
    return;
  }
  MakeDirs(ParentOf(dir));
  auto inode = std::make_shared<Inode>();
  inode->number = next_inode_++;
  inode->directory = true;
  entries_[dir] = inode;
  Notify(dir, true);
}

std::shared_ptr<FakeFileSystem::Inode>& FakeFileSystem::NewFile(
    const std::string& path, std::optional<std::uint64_t> inode) {
  MakeDirs(ParentOf(path));
  if (std::shared_ptr<Inode> replaced = Find(path)) {
    --replaced->links;
  }
  auto made = std::make_shared<Inode>();
  made->number = inode.value_or(next_inode_++);
  std::shared_ptr<Inode>& slot = entries_[path];
  slot = made;
  Notify(path, true);
  return slot;
}

void FakeFileSystem::Append(const std::string& named, std::string_view text,
                            std::optional<std::uint64_t> inode) {
  const std::string path = Resolved(named);  // a writer opening a link writes its target
  std::shared_ptr<Inode> file = Find(path);
  if (file == nullptr) {
    file = NewFile(path, inode);
  }
  file->content.append(text);
  Notify(path, false);
}

void FakeFileSystem::Create(const std::string& path, std::optional<std::uint64_t> inode) {
  if (std::shared_ptr<Inode> file = Find(path); file != nullptr && !inode) {
    file->content.clear();
    Notify(path, false);
    return;
  }
  NewFile(path, inode);
}

void FakeFileSystem::Truncate(const std::string& path, std::uint64_t size) {
  std::shared_ptr<Inode> file = Find(path);
  if (file == nullptr) {
    throw std::logic_error("truncate of a missing file " + path);
  }
  file->content.resize(std::min<std::uint64_t>(size, file->content.size()));
  Notify(path, false);
}

void FakeFileSystem::Rename(const std::string& from, const std::string& to) {
  std::shared_ptr<Inode> file = Find(from);
  if (file == nullptr) {
    throw std::logic_error("rename of a missing file " + from);
  }
  if (std::shared_ptr<Inode> replaced = Find(to)) {
    --replaced->links;
  }
  entries_.erase(from);
  entries_[to] = file;
  Notify(from, true);
  Notify(to, true);
}

void FakeFileSystem::Remove(const std::string& path) {
  std::shared_ptr<Inode> file = Find(path);
  if (file == nullptr) {
    throw std::logic_error("unlink of a missing file " + path);
  }
  --file->links;
  entries_.erase(path);
  Notify(path, true);
}

void FakeFileSystem::Copy(const std::string& from, const std::string& to,
                          std::optional<std::uint64_t> bytes) {
  std::shared_ptr<Inode> source = Find(from);
  if (source == nullptr) {
    throw std::logic_error("copy of a missing file " + from);
  }
  const std::string content = source->content.substr(0, bytes.value_or(source->content.size()));
  std::shared_ptr<Inode> copy = Find(to);
  if (copy == nullptr) {
    copy = NewFile(to, std::nullopt);
  }
  copy->content = content;
  Notify(to, false);
}

std::shared_ptr<FakeFileSystem::Inode> FakeFileSystem::OpenForWriting(const std::string& path) {
  std::shared_ptr<Inode> file = Find(path);
  return file != nullptr ? file : NewFile(path, std::nullopt);
}

void FakeFileSystem::AppendHeld(const std::shared_ptr<Inode>& inode, std::string_view text) {
  inode->content.append(text);
  for (const auto& [path, named] : entries_) {
    if (named == inode) {
      Notify(path, false);
    }
  }
}

std::uint64_t FakeFileSystem::InodeOf(const std::string& path) const {
  std::shared_ptr<Inode> file = Find(path);
  if (file == nullptr) {
    throw std::logic_error("no file " + path);
  }
  return file->number;
}

Result<FileStatus> FakeFileSystem::Stat(const std::string& path, bool follow) const {
  std::shared_ptr<Inode> file = Find(follow ? Resolved(path) : path);
  if (file == nullptr) {
    return Error{path + ": No such file or directory"};
  }
  return FileStatus{kDevice,     file->number, file->content.size(), file->links, TypeOf(*file),
                    file->owner, false};
}

Result<std::vector<DirEntry>> FakeFileSystem::List(const std::string& dir) const {
  std::shared_ptr<Inode> listed = Find(dir);
  if (listed == nullptr || !listed->directory) {
    return Error{dir + ": No such file or directory"};
  }
  std::vector<DirEntry> entries;
  for (const auto& [path, inode] : entries_) {
    if (path != "/" && ParentOf(path) == dir) {
      entries.push_back({NameOf(path), TypeOf(*inode)});
    }
  }
  return entries;
}

// Appends through a descriptor: to its inode, wherever its name went; writes fail as told.
class FakeAppendableFile final : public AppendableFile {
 public:
  FakeAppendableFile(const FakeFileSystem& fs, std::string path,
                     std::shared_ptr<FakeFileSystem::Inode> inode)
      : fs_(fs), path_(std::move(path)), reader_(inode), inode_(std::move(inode)) {}

  Result<FileStatus> Status() const override { return reader_.Status(); }
  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<char> into) const override {
    return reader_.ReadAt(offset, into);
  }
  ::trainwatch::Status Append(std::string_view bytes) override {
    if (auto failing = fs_.failing_writes_.find(path_); failing != fs_.failing_writes_.end()) {
      fs_.Mutable().AppendHeld(inode_, bytes.substr(0, failing->second.partial));
      return Error{path_ + ": " + std::strerror(failing->second.error)};
    }
    fs_.Mutable().AppendHeld(inode_, bytes);
    return ::trainwatch::Status::Ok();
  }

 private:
  const FakeFileSystem& fs_;
  std::string path_;
  FakeReadableFile reader_;
  std::shared_ptr<FakeFileSystem::Inode> inode_;
};

Result<std::unique_ptr<ReadableFile>> FakeFileSystem::OpenForReading(
    const std::string& path) const {
  std::shared_ptr<Inode> file = Find(Resolved(path));
  if (file == nullptr) {
    return Error{path + ": No such file or directory"};
  }
  if (auto failing = failing_opens_.find(path); failing != failing_opens_.end()) {
    return Error{path + ": " + std::strerror(failing->second)};
  }
  if (file->directory) {
    return Error{path + ": is a directory, not a regular file"};  // as OpenUntrusted says
  }
  return std::unique_ptr<ReadableFile>(std::make_unique<FakeReadableFile>(file));
}

void FakeFileSystem::FailOpens(const std::string& path, int error) {
  if (error == 0) {
    failing_opens_.erase(path);
  } else {
    failing_opens_[path] = error;
  }
}

void FakeFileSystem::FailWrites(const std::string& path, int error, std::size_t partial) {
  if (error == 0) {
    failing_writes_.erase(path);
  } else {
    failing_writes_[path] = {error, partial};
  }
}

Result<std::unique_ptr<AppendableFile>> FakeFileSystem::OpenForAppend(const std::string& path,
                                                                      unsigned /*mode*/) const {
  if (auto failing = failing_opens_.find(path); failing != failing_opens_.end()) {
    return Error{path + ": " + std::strerror(failing->second)};
  }
  std::shared_ptr<Inode> file = Find(Resolved(path));
  if (file == nullptr) {
    file = Mutable().NewFile(Resolved(path), std::nullopt);
  }
  return std::unique_ptr<AppendableFile>(std::make_unique<FakeAppendableFile>(*this, path, file));
}

Status FakeFileSystem::ReplaceWhole(const std::string& path, std::string_view bytes,
                                    unsigned /*mode*/) const {
  if (auto failing = failing_writes_.find(path); failing != failing_writes_.end()) {
    return Error{path + ".tmp: " + std::strerror(failing->second.error)};  // the old stays
  }
  Mutable().Create(path + ".tmp");
  Mutable().Append(path + ".tmp", bytes);
  Mutable().Rename(path + ".tmp", path);
  return Status::Ok();
}

Status FakeFileSystem::RenameFile(const std::string& from, const std::string& to) const {
  if (auto failing = failing_writes_.find(to); failing != failing_writes_.end()) {
    return Error{to + ": " + std::strerror(failing->second.error)};
  }
  if (Find(from) == nullptr) {
    return Error{from + ": No such file or directory"};
  }
  Mutable().Rename(from, to);
  return Status::Ok();
}

Result<FileSystemKind> FakeFileSystem::KindOf(const std::string& dir) const {
  for (std::string at = dir;; at = ParentOf(at)) {
    if (auto kind = kinds_.find(at); kind != kinds_.end()) {
      return kind->second;
    }
    if (at == "/") {
      return FileSystemKind::kLocal;
    }
  }
}

}  // namespace trainwatch::testing
