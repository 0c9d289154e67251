#include "capture/container_executable.h"

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

namespace trainwatch::capture {
namespace {

Error ErrnoError(const std::string& what) { return Error{what + ": " + std::strerror(errno)}; }

// Keeps the newest kMaxExecutableCopies copies (by modification time, touched on reuse), and
// `keep`, the one just made, whatever the clock's granularity says of its age.
void TrimCopies(const std::string& dir, const std::string& keep) {
  std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> copies;
  std::error_code error;
  for (auto it = std::filesystem::directory_iterator(dir, error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    const std::string name = it->path().filename().string();
    const auto written = std::filesystem::last_write_time(it->path(), error);
    if (name.starts_with("exe-") && it->path() != keep) {
      copies.emplace_back(written, it->path());
    } else if (name.starts_with("tmp-") &&
               std::filesystem::file_time_type::clock::now() - written > std::chrono::hours(1)) {
      std::filesystem::remove(it->path(), error);  // a copy a killed daemon left half made
    }
  }
  if (copies.size() < kMaxExecutableCopies) {
    return;
  }
  std::sort(copies.begin(), copies.end());
  for (std::size_t i = 0; i + kMaxExecutableCopies - 1 < copies.size(); ++i) {
    std::filesystem::remove(copies[i].second, error);
  }
}

}  // namespace

Result<std::string> CopyOfExecutable(const std::string& exe, const std::string& dir) {
  const UniqueFd in(::open(exe.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  struct stat info {};
  if (in.get() < 0 || ::fstat(in.get(), &info) != 0) {
    return ErrnoError(exe);
  }
  if (!S_ISREG(info.st_mode)) {
    return Error{exe + ": not a regular file"};
  }
  if (static_cast<std::size_t>(info.st_size) > kMaxExecutableCopy) {
    return Error{exe + ": " + std::to_string(info.st_size) + " bytes, over the " +
                 std::to_string(kMaxExecutableCopy >> 20) + " MiB a copy may take"};
  }
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoError(dir);
  }
  const std::string copy = dir + "/exe-" + std::to_string(info.st_dev) + "-" +
                           std::to_string(info.st_ino) + "-" + std::to_string(info.st_size) + "-" +
                           std::to_string(info.st_ctim.tv_sec) + "." +
                           std::to_string(info.st_ctim.tv_nsec);
  if (::utimensat(AT_FDCWD, copy.c_str(), nullptr, AT_SYMLINK_NOFOLLOW) == 0) {
    return copy;  // made by an earlier capture (renamed into place whole)
  }
  std::string temporary = dir + "/tmp-XXXXXX";
  const UniqueFd out(::mkstemp(temporary.data()));
  if (out.get() < 0) {
    return ErrnoError(dir);
  }
  off_t left = info.st_size;
  while (left > 0) {
    const ssize_t sent = ::sendfile(out.get(), in.get(), nullptr, static_cast<std::size_t>(left));
    if (sent <= 0) {
      const Error error = sent == 0 ? Error{exe + ": shorter than it said"} : ErrnoError(exe);
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
  TrimCopies(dir, copy);
  return copy;
}

}  // namespace trainwatch::capture
