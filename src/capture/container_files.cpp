#include "capture/container_files.h"

#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/unique_fd.h"
#include "core/untrusted_file.h"

namespace trainwatch::capture {
namespace {

Error ErrnoError(const std::string& what) { return Error{what + ": " + std::strerror(errno)}; }

// Copies older than `kUnused` count against kMaxContainerFileCopies; the newest of them stay.
// Half-made ones (a killed daemon's) go after an hour.
void TrimCopies(const std::string& dir) {
  using Clock = std::filesystem::file_time_type::clock;
  constexpr auto kUnused = std::chrono::minutes(10);
  std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> idle;
  std::error_code error;
  for (auto it = std::filesystem::directory_iterator(dir, error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    std::error_code ignored;
    const std::string name = it->path().filename().string();
    const auto written = std::filesystem::last_write_time(it->path(), ignored);
    if (ignored || Clock::now() - written < kUnused) {
      continue;
    }
    if (name.starts_with("exe-") || name.starts_with("debug-")) {
      idle.emplace_back(written, it->path());
    } else if (name.starts_with("tmp-") && Clock::now() - written > std::chrono::hours(1)) {
      std::filesystem::remove_all(it->path(), ignored);
    }
  }
  std::sort(idle.begin(), idle.end());
  for (std::size_t i = 0; i + kMaxContainerFileCopies < idle.size(); ++i) {
    std::error_code ignored;
    std::filesystem::remove_all(idle[i].second, ignored);
  }
}

// Copies the regular file open at `in` (described by `info`) to `copy` through a temporary
// file in `dir`, read-only, renamed into place whole. A copy already there is reused (touched).
Result<std::string> CopyOpened(int in, const struct stat& info, const std::string& what,
                               const std::string& dir, const std::string& copy) {
  if (!S_ISREG(info.st_mode)) {
    return Error{what + ": not a regular file"};
  }
  if (static_cast<std::size_t>(info.st_size) > kMaxContainerFileCopy) {
    return Error{what + ": " + std::to_string(info.st_size) + " bytes, over the " +
                 std::to_string(kMaxContainerFileCopy >> 20) + " MiB a copy may take"};
  }
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoError(dir);
  }
  if (::utimensat(AT_FDCWD, copy.c_str(), nullptr, AT_SYMLINK_NOFOLLOW) == 0) {
    return copy;
  }
  std::error_code made;
  std::filesystem::create_directories(std::filesystem::path(copy).parent_path(), made);
  std::string temporary = dir + "/tmp-XXXXXX";
  const UniqueFd out(::mkstemp(temporary.data()));
  if (out.get() < 0) {
    return ErrnoError(dir);
  }
  off_t left = info.st_size;
  while (left > 0) {
    const ssize_t sent = ::sendfile(out.get(), in, nullptr, static_cast<std::size_t>(left));
    if (sent <= 0) {
      const Error error = sent == 0 ? Error{what + ": shorter than it said"} : ErrnoError(what);
      ::unlink(temporary.c_str());
      return error;
    }
    left -= sent;
  }
  if (::fchmod(out.get(), 0400) != 0 || ::rename(temporary.c_str(), copy.c_str()) != 0) {
    const Error error = ErrnoError(copy);
    ::unlink(temporary.c_str());
    return error;
  }
  return copy;
}

std::string Identity(const struct stat& info) {
  return std::to_string(info.st_dev) + "-" + std::to_string(info.st_ino) + "-" +
         std::to_string(info.st_size) + "-" + std::to_string(info.st_ctim.tv_sec) + "." +
         std::to_string(info.st_ctim.tv_nsec);
}

}  // namespace

Result<std::string> CopyOfExecutable(const std::string& exe, const std::string& dir) {
  const UniqueFd in(::open(exe.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  struct stat info {};
  if (in.get() < 0 || ::fstat(in.get(), &info) != 0) {
    return ErrnoError(exe);
  }
  TrimCopies(dir);
  return CopyOpened(in.get(), info, exe, dir, dir + "/exe-" + Identity(info));
}

Result<std::string> CopyOfDebugInfo(const std::string& root, const std::string& build_id,
                                    const std::string& dir) {
  if (build_id.size() < 3 || build_id.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Error{"no usable build id ('" + build_id + "')"};
  }
  const UniqueFd root_fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root_fd.get() < 0) {
    return ErrnoError(root);
  }
  const std::string relative =
      ".build-id/" + build_id.substr(0, 2) + "/" + build_id.substr(2) + ".debug";
  const std::string path = "/usr/lib/debug/" + relative;
  UntrustedPath how;
  how.dir_fd = root_fd.get();
  how.in_root = true;  // absolute links resolve inside the image, never on this host
  how.follow_last_link = true;
  how.type = S_IFREG;
  how.max_size = static_cast<off_t>(kMaxContainerFileCopy);
  Result<UniqueFd> in = OpenUntrusted(path, how, O_RDONLY);
  struct stat info {};
  if (!in) {
    return in.error();
  }
  if (::fstat(in->get(), &info) != 0) {
    return ErrnoError(path);
  }
  // Named by the file's identity, not its build id: an image cannot plant debug information
  // another image's ranks would then be read with.
  const std::string folder = dir + "/debug-" + Identity(info);
  Result<std::string> copy = CopyOpened(in->get(), info, path, dir, folder + "/" + relative);
  if (!copy) {
    return copy.error();
  }
  ::utimensat(AT_FDCWD, folder.c_str(), nullptr, 0);  // its age is the folder's
  return folder;
}

}  // namespace trainwatch::capture
