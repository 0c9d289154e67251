#include "collect/rooted_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace trainwatch::collect {

RootedFiles::RootedFiles(const std::string& root)
    : root_(::open(root.empty() ? "/" : root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)),
      root_name_(root.empty() ? "/" : root) {}

UntrustedPath RootedFiles::Below(mode_t type) const {
  UntrustedPath how;
  how.dir_fd = root_.get();
  how.in_root = true;
  how.type = type;
  return how;
}

std::optional<std::string> RootedFiles::Read(const std::string& path, std::size_t max_bytes) const {
  UntrustedPath how = Below(S_IFREG);
  how.follow_last_link = true;
  Result<UntrustedText> text =
      root_.get() < 0 ? Result<UntrustedText>(Error{}) : ReadUntrusted(path, how, max_bytes);
  return text ? std::optional<std::string>(std::move(text->text)) : std::nullopt;
}

std::optional<DirPtr> RootedFiles::OpenDir(const std::string& path) const {
  UntrustedPath how = Below(S_IFDIR);
  how.follow_last_link = true;
  Result<UniqueFd> fd = root_.get() < 0 ? Result<UniqueFd>(Error{})
                                        : OpenUntrusted(path, how, O_RDONLY | O_DIRECTORY);
  if (!fd) {
    return std::nullopt;
  }
  const int raw = fd->get();
  DIR* dir = ::fdopendir(raw);
  if (dir == nullptr) {
    return std::nullopt;  // `fd` still owns the descriptor and closes it
  }
  static_cast<void>(fd->Release());  // the DIR owns it from here
  return DirPtr(dir);
}

Result<UniqueFd> RootedFiles::OpenOwned(const std::string& path, mode_t type, uid_t owner,
                                        int access, std::optional<off_t> max_size) const {
  if (root_.get() < 0) {
    return Error{root_name_ + ": " + std::strerror(ENOENT)};
  }
  UntrustedPath how = Below(type);
  how.owner = owner;
  how.max_size = max_size;
  return OpenUntrusted(path, how, access);
}

bool RootedFiles::Is(const std::string& path, mode_t type) const {
  UntrustedPath how = Below(type);
  how.follow_last_link = true;
  return root_.get() >= 0 && OpenUntrusted(path, how, O_PATH).ok();
}

}  // namespace trainwatch::collect
