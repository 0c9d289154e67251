// Fuzzes the daemon config parser on arbitrary YAML text: problems become diagnostics, and a
// config is set exactly when there are none.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "config/daemon_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "HOME") {
      return "/home/fuzz";
    }
    return std::nullopt;
  };
  const trainwatch::config::ConfigLoad load = trainwatch::config::ParseDaemonConfig(
      std::string_view(reinterpret_cast<const char*>(data), size), "/etc/trainwatch/fuzz.yaml",
      env);
  if (load.config.has_value() == !load.errors.empty()) {
    std::abort();  // the documented contract: a config exactly when there are no errors
  }
  return 0;
}
