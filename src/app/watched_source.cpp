#include "app/watched_source.h"

#include <spdlog/spdlog.h>

namespace trainwatch::app {

void WatchedSource::SwapRules(rules::SourceRules fresh) {
  rules = std::move(fresh);
  ForEachStream([&](detect::StreamDetector& stream, source::TailedFile*) {
    if (Status swapped = stream.SetRules(rules.lines); !swapped) {
      spdlog::error("source {}: {}: {}", config.name, stream.identity().name,
                    swapped.error().message);
    }
  });
}

}  // namespace trainwatch::app
