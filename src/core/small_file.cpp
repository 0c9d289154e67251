#include "core/small_file.h"

namespace trainwatch {

Result<std::optional<std::string>> ReadSmallFile(const FileSystem& fs, const std::string& path,
                                                 std::size_t max_bytes) {
  Result<std::unique_ptr<ReadableFile>> file = fs.OpenForReading(path);
  if (!file) {
    if (!fs.Stat(path, /*follow=*/false)) {
      return std::optional<std::string>();  // none yet
    }
    return file.error();
  }
  Result<FileStatus> status = (*file)->Status();
  if (!status) {
    return status.error();
  }
  if (status->size > max_bytes) {
    return Error{path + ": " + std::to_string(status->size) + " bytes, more than the " +
                 std::to_string(max_bytes) + " it may hold"};
  }
  std::string text(status->size, '\0');
  std::size_t filled = 0;
  while (filled < text.size()) {
    Result<std::size_t> n =
        (*file)->ReadAt(filled, std::span<char>(text.data() + filled, text.size() - filled));
    if (!n) {
      return n.error();
    }
    if (*n == 0) {
      break;  // cut short since the stat: what is there is the file
    }
    filled += *n;
  }
  text.resize(filled);
  return std::optional<std::string>(std::move(text));
}

}  // namespace trainwatch
