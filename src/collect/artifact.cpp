#include "collect/artifact.h"

#include <utility>

namespace trainwatch::collect {

const char* CollectorStatusName(CollectorStatus status) {
  switch (status) {
    case CollectorStatus::kOk:
      return "ok";
    case CollectorStatus::kFailed:
      return "failed";
    case CollectorStatus::kNotPermitted:
      return "not_permitted";
    case CollectorStatus::kMissing:
      return "missing";
    case CollectorStatus::kTimedOut:
      return "timed_out";
    case CollectorStatus::kAbandoned:
      return "abandoned";
    case CollectorStatus::kSkipped:
      return "skipped";
  }
  return "unknown";
}

void AddDetail(CollectorResult& result, const std::string& line) {
  if (!result.detail.empty()) {
    result.detail += '\n';
  }
  result.detail += line;
}

void AddText(CollectorResult& result, std::string path, std::string content, bool redact) {
  Artifact artifact;
  artifact.path = std::move(path);
  artifact.content = std::move(content);
  artifact.redact = redact;
  result.artifacts.push_back(std::move(artifact));
}

void AddRange(CollectorResult& result, std::string path, std::string source_file,
              std::uint64_t offset, std::uint64_t length) {
  Artifact artifact;
  artifact.path = std::move(path);
  artifact.source_file = std::move(source_file);
  artifact.offset = offset;
  artifact.length = length;
  result.artifacts.push_back(std::move(artifact));
}

void Finish(CollectorResult& result, const Stopwatch& stopwatch, std::size_t asked,
            std::size_t read) {
  result.bytes = 0;
  for (const Artifact& artifact : result.artifacts) {
    result.bytes += artifact.source_file.empty() ? artifact.content.size() : artifact.length;
  }
  if (asked == 0) {
    result.status = CollectorStatus::kSkipped;
    if (result.detail.empty()) {
      result.detail = "nothing to collect";
    }
  } else if (read == 0) {
    result.status = CollectorStatus::kFailed;
  } else {
    result.status = CollectorStatus::kOk;
  }
  result.duration_seconds = stopwatch.Seconds();
}

}  // namespace trainwatch::collect
