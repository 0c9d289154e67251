#include "ops/source_snapshot.h"

namespace trainwatch::ops {

SourceSnapshot SnapshotOf(detect::WatchedSource& source, SteadyTime now, WallTime wall_now) {
  SourceSnapshot snapshot;
  snapshot.name = source.config().name;
  snapshot.tags = source.config().tags;
  snapshot.paths = source.config().paths;
  snapshot.lines = source.lines();
  snapshot.bytes = source.bytes();
  source.ForEachStream([&](detect::StreamDetector& stream, source::TailedFile* file) {
    StreamSnapshot entry = SnapshotOf(stream, now, wall_now);
    if (file == nullptr) {
      snapshot.streams.push_back(std::move(entry));
      return;
    }
    entry.offset = file->tail.position().offset;
    entry.durable_offset = stream.Durable(file->tail.position()).offset;
    entry.read_offset = file->tail.read_offset();
    if (Result<FileStatus> status = file->tail.Status(); status.ok()) {
      entry.size = status->size;  // fstat of the open descriptor, as the tail set's sweep does
    }
    entry.writers = stream.writers();
    entry.gone = file->gone_since.has_value();
    snapshot.files.push_back(std::move(entry));
  });
  if (source.config().kmsg) {
    snapshot.kmsg_running = source.kmsg_running();
  }
  if (source.tails() != nullptr) {
    snapshot.parked_copies = source.tails()->parked_copies();
    const std::map<std::string, std::string>& unwatched = source.tails()->unwatched();
    snapshot.unwatched_count = unwatched.size();
    for (const auto& [path, why] : unwatched) {
      if (snapshot.unwatched.size() == SourceSnapshot::kUnwatchedListed) {
        break;
      }
      snapshot.unwatched.emplace_back(path, why);
    }
  }
  return snapshot;
}

}  // namespace trainwatch::ops
