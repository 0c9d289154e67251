#include "capture/bundle_contents.h"

#include <utility>

namespace trainwatch::capture {
namespace {

std::uint64_t SizeOf(const collect::Artifact& artifact) {
  return artifact.source_file.empty() ? artifact.content.size() : artifact.length;
}

}  // namespace

std::uint64_t ArtifactBytes(const CollectorResults& builtins, const CollectorResults& commands) {
  std::uint64_t bytes = 0;
  for (const CollectorResults* results : {&builtins, &commands}) {
    for (const collect::CollectorResult& result : *results) {
      for (const collect::Artifact& artifact : result.artifacts) {
        bytes += SizeOf(artifact);
      }
    }
  }
  return bytes;
}

std::vector<collect::Artifact> CopySmallArtifacts(const CollectorResults& builtins,
                                                  const CollectorResults& commands,
                                                  std::uint64_t& bytes) {
  std::vector<collect::Artifact> artifacts;
  bytes = 0;
  for (const CollectorResults* results : {&builtins, &commands}) {
    for (const collect::CollectorResult& result : *results) {
      for (const collect::Artifact& artifact : result.artifacts) {
        if (SizeOf(artifact) <= kSmallArtifact) {
          bytes += SizeOf(artifact);
          artifacts.push_back(artifact);
        }
      }
    }
  }
  return artifacts;
}

std::vector<collect::Artifact> TakeArtifacts(CollectorResults& builtins, CollectorResults& commands,
                                             bool reduced) {
  std::vector<collect::Artifact> artifacts;
  for (CollectorResults* results : {&builtins, &commands}) {
    for (collect::CollectorResult& result : *results) {
      for (collect::Artifact& artifact : result.artifacts) {
        if (reduced && (!artifact.source_file.empty() || SizeOf(artifact) > kSmallArtifact)) {
          continue;
        }
        artifacts.push_back(std::move(artifact));
      }
      result.artifacts.clear();
    }
  }
  return artifacts;
}

CollectorResults StatusesOf(const CollectorResults& builtins, const CollectorResults& commands) {
  CollectorResults statuses;
  statuses.reserve(builtins.size() + commands.size());
  for (const CollectorResults* results : {&builtins, &commands}) {
    for (const collect::CollectorResult& result : *results) {
      collect::CollectorResult status;
      status.name = result.name;
      status.status = result.status;
      status.exit_code = result.exit_code;
      status.detail = result.detail;
      status.duration_seconds = result.duration_seconds;
      status.bytes = result.bytes;
      status.truncated = result.truncated;
      statuses.push_back(std::move(status));
    }
  }
  return statuses;
}

}  // namespace trainwatch::capture
