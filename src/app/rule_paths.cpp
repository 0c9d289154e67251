#include "app/rule_paths.h"

#include <filesystem>

namespace trainwatch::app {

std::vector<std::string> DefaultRulePaths() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share" / "trainwatch" / "rules";
    if (fs::is_directory(installed, ec)) {
      return {installed.string()};
    }
  }
  const fs::path source_tree = TRAINWATCH_SOURCE_RULES_DIR;
  if (fs::is_directory(source_tree, ec)) {
    return {source_tree.string()};
  }
  return {};
}

std::string ShippedConfigPath() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed =
        exe.parent_path().parent_path() / "share" / "trainwatch" / "trainwatch.yaml";
    if (fs::exists(installed, ec)) {
      return installed.string();
    }
  }
  return TRAINWATCH_SOURCE_CONFIG;
}

}  // namespace trainwatch::app
