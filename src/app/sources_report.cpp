// What the rest of the daemon reads of the sources: the facts a capture needs, the status and
// metrics snapshot, and the activity number that says whether the metrics moved.
#include <set>

#include "app/sources.h"
#include "source/glob.h"

namespace trainwatch::app {

void Sources::FillCapture(capture::CaptureRequest& request) {
  std::set<int> pids(request.pids.begin(), request.pids.end());
  ForEachSource([&](WatchedSource& source) {
    source.ForEachStream([&](detect::StreamDetector& stream, source::TailedFile* file) {
      if (file != nullptr) {
        request.log_files.push_back(file->tail.path());
      }
      for (const source::WriterProcess& writer : stream.writers()) {
        pids.insert(writer.pid);
        request.remembered.push_back(writer);
      }
    });
  });
  for (const detect::Firing& firing : request.incident.firings) {
    for (const source::WriterProcess& writer : firing.writers) {
      pids.insert(writer.pid);  // gone by now, perhaps, but named in the manifest
      request.remembered.push_back(writer);
    }
  }
  request.pids.assign(pids.begin(), pids.end());
  for (auto& source : sources_) {
    for (const std::string& pattern : source->config().paths) {
      request.watched_dirs.push_back(source::LiteralDirOf(pattern));
    }
  }
}

std::vector<ops::SourceSnapshot> Sources::Snapshot(SteadyTime now,
                                                   std::chrono::system_clock::time_point wall_now) {
  std::vector<ops::SourceSnapshot> snapshots;
  ForEachSource([&](WatchedSource& source) {
    ops::SourceSnapshot snapshot;
    snapshot.name = source.config().name;
    snapshot.tags = source.config().tags;
    snapshot.paths = source.config().paths;
    snapshot.lines = source.lines();
    snapshot.bytes = source.bytes();
    source.ForEachStream([&](detect::StreamDetector& stream, source::TailedFile* file) {
      ops::StreamSnapshot entry = ops::SnapshotOf(stream, now, wall_now);
      if (file == nullptr) {
        snapshot.streams.push_back(std::move(entry));
        return;
      }
      entry.offset = file->tail.position().offset;
      entry.durable_offset = stream.Durable(file->tail.position()).offset;
      entry.writers = stream.writers();
      entry.gone = file->gone_since.has_value();
      snapshot.files.push_back(std::move(entry));
    });
    if (source.config().kmsg) {
      snapshot.kmsg_running = source.kmsg_running();
    }
    if (source.tails() != nullptr) {
      snapshot.parked_copies = source.tails()->parked_copies();
    }
    snapshots.push_back(std::move(snapshot));
  });
  return snapshots;
}

std::uint64_t Sources::Activity() const {
  std::uint64_t sum = 0;
  auto add = [&](const WatchedSource& source) {
    sum = sum * 31 + source.lines();
    sum = sum * 31 + source.bytes();
    sum = sum * 31 + (source.tails() != nullptr ? source.tails()->files().size() : 0);
  };
  for (const auto& source : sources_) {
    add(*source);
  }
  if (wrap_) {
    add(*wrap_);
  }
  return sum;
}

std::size_t Sources::files() const {
  std::size_t count = 0;
  for (const auto& source : sources_) {
    count += source->tails() != nullptr ? source->tails()->files().size() : 0;
  }
  return count;
}

}  // namespace trainwatch::app
