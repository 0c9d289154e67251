// Lookups into a CollectorResult for the built-in collectors' tests: an artifact by its bundle
// path, all paths, and the sum of sizes a result's `bytes` must equal. Test thread only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collect/artifact.h"

namespace trainwatch::testing {

inline const collect::Artifact* FindArtifact(const collect::CollectorResult& result,
                                             const std::string& path) {
  for (const collect::Artifact& artifact : result.artifacts) {
    if (artifact.path == path) {
      return &artifact;
    }
  }
  return nullptr;
}

inline std::vector<std::string> Paths(const collect::CollectorResult& result) {
  std::vector<std::string> paths;
  for (const collect::Artifact& artifact : result.artifacts) {
    paths.push_back(artifact.path);
  }
  return paths;
}

// Content size, or length for a file range: what `bytes` counts.
inline std::uint64_t SumOfSizes(const collect::CollectorResult& result) {
  std::uint64_t sum = 0;
  for (const collect::Artifact& artifact : result.artifacts) {
    sum += artifact.source_file.empty() ? artifact.content.size() : artifact.length;
  }
  return sum;
}

}  // namespace trainwatch::testing
