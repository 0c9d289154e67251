#include "source/rotated_name.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace trainwatch::source {
namespace {

bool IsSeparator(char c) { return c == '.' || c == '-' || c == '_'; }

}  // namespace

bool IsRotatedCopyName(const std::string& copy, const std::string& dir,
                       const std::string& original) {
  if (std::filesystem::path(copy).parent_path().string() != dir || original.empty()) {
    return false;
  }
  const std::string name = std::filesystem::path(copy).filename().string();
  auto separator = IsSeparator;
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

std::vector<std::string> RotatedCopyOriginals(const std::string& copy_name) {
  std::vector<std::string> originals;
  // The original's extension is the copy's last '.' onwards (it holds no other '.').
  const std::size_t extension = copy_name.rfind('.');
  for (std::size_t at = 1; at + 1 < copy_name.size(); ++at) {
    if (!IsSeparator(copy_name[at])) {
      continue;
    }
    // train.log.1: the original is a prefix ending before a separator.
    originals.push_back(copy_name.substr(0, at));
    // train.1.log: a stem ending before a separator, and the extension.
    if (extension != std::string::npos && at < extension) {
      std::string original = copy_name.substr(0, at);
      original += copy_name.substr(extension);
      originals.push_back(std::move(original));
    }
  }
  return originals;
}

}  // namespace trainwatch::source
