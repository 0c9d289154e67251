#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/unique_fd.h"

namespace trainwatch {
namespace {

Status Fail(const std::string& temporary, const std::string& name) {
  const std::string why = std::strerror(errno);
  ::unlink(temporary.c_str());
  return Error{name + ": " + why};
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view bytes, unsigned mode,
                           std::string_view temporary_suffix) {
  const std::string temporary = path + std::string(temporary_suffix);
  {
    UniqueFd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
    if (fd.get() < 0) {
      return Error{temporary + ": " + std::strerror(errno)};
    }
    if (::fchmod(fd.get(), mode) != 0) {
      return Fail(temporary, temporary);
    }
    while (!bytes.empty()) {
      const ssize_t n = ::write(fd.get(), bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0) {
        return Fail(temporary, temporary);
      }
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    return Fail(temporary, path);
  }
  return Status::Ok();
}

}  // namespace trainwatch
