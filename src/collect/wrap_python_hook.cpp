#include "collect/wrap_python_hook.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "collect/python_hook.h"
#include "config/shipped_paths.h"

namespace trainwatch::collect {

std::unique_ptr<WrapPythonHook> WrapPythonHook::Prepare(const std::string& state_dir) {
  namespace fs = std::filesystem;
  const std::string dir = state_dir + "/stacks/wrap-" + std::to_string(::getpid());
  std::error_code error;
  fs::create_directories(dir, error);
  if (!error) {
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, error);
  }
  if (error) {
    spdlog::warn("wrap: no Python hook (stacks at a hang need gdb then): {}: {}", dir,
                 error.message());
    return nullptr;
  }
  return std::unique_ptr<WrapPythonHook>(new WrapPythonHook(dir));
}

WrapPythonHook::~WrapPythonHook() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::vector<std::string> WrapPythonHook::Environment() const {
  const char* pythonpath = std::getenv("PYTHONPATH");
  return PythonHookEnvironment(config::ShippedPythonHookDir(), dir_,
                               pythonpath != nullptr ? pythonpath : "");
}

}  // namespace trainwatch::collect
