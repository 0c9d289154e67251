#include "core/trusted_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/split.h"

namespace trainwatch {
namespace {

// `ancestor`: a directory above the path checked, where a sticky bit (/tmp) keeps others from
// renaming what they do not own; the path itself is never trusted for it.
Status CheckOne(const std::filesystem::path& path, uid_t owner, bool ancestor) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) {
    return Error{path.string() + ": " + std::strerror(errno)};
  }
  if (info.st_uid != 0 && info.st_uid != owner) {
    return Error{path.string() + ": owned by uid " + std::to_string(info.st_uid)};
  }
  const bool sticky_dir = ancestor && S_ISDIR(info.st_mode) && (info.st_mode & S_ISVTX) != 0;
  if (OthersMayWrite(info.st_mode, info.st_gid) && !sticky_dir) {
    return Error{
        path.string() + ": writable by " +
        ((info.st_mode & S_IWOTH) != 0 ? "everyone" : "its group " + std::to_string(info.st_gid))};
  }
  return Status::Ok();
}

}  // namespace

bool OthersMayWrite(mode_t mode, gid_t gid) {
  return (mode & S_IWOTH) != 0 || ((mode & S_IWGRP) != 0 && gid != 0);
}

Result<std::string> CheckTrustedPath(const std::string& path, uid_t owner) {
  std::error_code error;
  const std::filesystem::path real = std::filesystem::canonical(path, error);
  if (error) {
    return Error{path + ": " + error.message()};
  }
  // The path itself, then each directory up to /.
  for (std::filesystem::path at = real;; at = at.parent_path()) {
    if (Status status = CheckOne(at, owner, at != real); !status.ok()) {
      return status.error();
    }
    if (at == at.root_path() || at.empty()) {
      return real.string();
    }
  }
}

std::string TrustedSearchPath(const std::string& path, uid_t owner,
                              std::vector<std::string>& dropped) {
  std::string kept;
  std::vector<std::string> seen;
  ForEachPiece(path, ':', [&](std::string_view piece) {
    const std::string dir(piece);
    if (dir.empty() || dir.front() != '/') {
      dropped.push_back((dir.empty() ? "\"\"" : dir) +
                        ": relative (the current directory is anybody's)");
      return;
    }
    // Kept as the directory checked, not the name: a link in PATH could be re-pointed later.
    const Result<std::string> real = CheckTrustedPath(dir, owner);
    if (!real) {
      // An absent one is dropped too, unsaid: whoever creates it later is not asked.
      if (!real.error().message.ends_with(std::strerror(ENOENT))) {
        dropped.push_back(real.error().message);
      }
      return;
    }
    if (std::find(seen.begin(), seen.end(), *real) == seen.end()) {  // /bin is /usr/bin often
      seen.push_back(*real);
      kept += (kept.empty() ? "" : ":") + *real;
    }
  });
  return kept;
}

void RestrictPathForRoot(std::vector<std::string>& dropped) {
  if (::geteuid() != 0) {
    return;
  }
  constexpr const char* kSystemPath = "/usr/sbin:/usr/bin:/sbin:/bin";
  const char* path = std::getenv("PATH");
  const std::string trusted = TrustedSearchPath(path != nullptr ? path : kSystemPath, 0, dropped);
  ::setenv("PATH", trusted.empty() ? kSystemPath : trusted.c_str(), 1);
}

}  // namespace trainwatch
