// What of a capture's collector results goes into its bundle: everything (the complete
// bundle), the small parts only (a reduced bundle, where a full one would break min_free; an
// early one, written before the slow parts are in), and the collectors' statuses for the
// manifest. Pure functions over the two lists of results (in-process collectors, commands).
#pragma once

#include <cstdint>
#include <vector>

#include "collect/artifact.h"

namespace trainwatch::capture {

using CollectorResults = std::vector<collect::CollectorResult>;

// What a reduced or early bundle keeps: outputs up to this size.
inline constexpr std::uint64_t kSmallArtifact = 64 * 1024;

// Uncompressed: an upper bound for what the artifacts take in a bundle.
std::uint64_t ArtifactBytes(const CollectorResults& builtins, const CollectorResults& commands);

// Copies of the artifacts up to kSmallArtifact (a file's range counts its length): an early
// bundle's, leaving the results whole for the complete one. `bytes`: their sum.
std::vector<collect::Artifact> CopySmallArtifacts(const CollectorResults& builtins,
                                                  const CollectorResults& commands,
                                                  std::uint64_t& bytes);

// Moves the artifacts out of the results, all of them, or when `reduced` only the outputs up
// to kSmallArtifact held in memory (no file ranges: the logs are what does not fit).
std::vector<collect::Artifact> TakeArtifacts(CollectorResults& builtins, CollectorResults& commands,
                                             bool reduced);

// Every result without its artifacts, in order: what the manifest says of each collector.
CollectorResults StatusesOf(const CollectorResults& builtins, const CollectorResults& commands);

}  // namespace trainwatch::capture
