// Saved tail positions: where each tailed file was read up to, by file identity, so that a
// restarted daemon (even after kill -9) resumes every file exactly where it stopped.
// Written atomically (temporary file, then rename): a crash mid-write leaves the previous
// state, never half of one. Pure I/O functions; any thread.
#pragma once

#include <string>
#include <vector>

#include "core/file_system.h"
#include "core/result.h"
#include "source/file_id.h"
#include "source/file_tail.h"

namespace trainwatch::source {

struct SavedTail {
  std::string source;  // the config source it belonged to
  std::string path;    // last known path (for people reading the file; identity is `id`)
  FileId id;
  Fingerprint fingerprint;
  TailPosition position;
};

struct TailState {
  std::vector<SavedTail> tails;
};

// A missing file is an empty state (first start): `first_start` tells them apart.
struct LoadedTailState {
  TailState state;
  bool first_start = true;
};
// An unreadable, damaged or oversized file is an error naming it.
Result<LoadedTailState> LoadTailState(const std::string& file,
                                      const FileSystem& fs = RealFileSystem());
// What SaveTailState writes (the daemon hands it to a LatestFileWriter).
std::string TailStateText(const TailState& state);
Status SaveTailState(const std::string& file, const TailState& state,
                     const FileSystem& fs = RealFileSystem());

}  // namespace trainwatch::source
