// FileId: which file a path names right now (device and inode). A renamed file keeps its
// FileId; a file recreated under the same name gets a new one. Value type; any thread.
#pragma once

#include <sys/types.h>

#include <compare>
#include <string>

namespace trainwatch::source {

struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  // NOLINTNEXTLINE(modernize-use-nullptr): false positive before clang-tidy 18 (LLVM #53961)
  auto operator<=>(const FileId&) const = default;
  std::string ToString() const { return std::to_string(dev) + ":" + std::to_string(ino); }
};

}  // namespace trainwatch::source
