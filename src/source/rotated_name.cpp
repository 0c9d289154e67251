#include "source/rotated_name.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace trainwatch::source {

bool IsRotatedCopyName(const std::string& copy, const std::string& dir,
                       const std::string& original) {
  if (std::filesystem::path(copy).parent_path().string() != dir || original.empty()) {
    return false;
  }
  const std::string name = std::filesystem::path(copy).filename().string();
  auto separator = [](char c) { return c == '.' || c == '-' || c == '_'; };
  if (name.size() > original.size() + 1 && name.starts_with(original) &&
      separator(name[original.size()])) {
    return true;
  }
  const std::size_t dot = original.rfind('.');
  if (dot == std::string::npos || dot == 0) {
    return false;
  }
  const std::string stem = original.substr(0, dot);
  const std::string extension = original.substr(dot);
  if (name.size() < stem.size() + extension.size() + 2 || !name.starts_with(stem) ||
      !name.ends_with(extension)) {
    return false;
  }
  const std::string middle = name.substr(stem.size(), name.size() - stem.size() - extension.size());
  return separator(middle[0]) && std::all_of(middle.begin() + 1, middle.end(), [&](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) || separator(c);
         });
}

}  // namespace trainwatch::source
