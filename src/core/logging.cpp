#include "core/logging.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace trainwatch {

void SetUpLogging() {
  auto logger = spdlog::stderr_logger_mt("trainwatch");
  logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %l %v");
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace trainwatch
