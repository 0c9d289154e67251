#include "config/shipped_paths.h"

#include <cstdlib>
#include <filesystem>

namespace trainwatch::config {

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

std::string UserCacheDir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/') {
    return std::string(xdg) + "/trainwatch";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/') {
    return std::string(home) + "/.cache/trainwatch";
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

std::string ShippedPythonHookDir() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share" / "trainwatch" / "python";
    if (fs::exists(installed / "sitecustomize.py", ec)) {
      return installed.string();
    }
  }
  return TRAINWATCH_SOURCE_PYTHON_DIR;
}

std::string ConfigPath(const std::string& given) {
  if (!given.empty()) {
    return given;
  }
  if (const char* path = std::getenv("TRAINWATCH_CONFIG"); path != nullptr && *path != '\0') {
    return path;
  }
  if (std::filesystem::exists("/etc/trainwatch/trainwatch.yaml")) {
    return "/etc/trainwatch/trainwatch.yaml";
  }
  return ShippedConfigPath();
}

}  // namespace trainwatch::config
