#include "ops/watcher_health.h"

#include <cmath>

namespace trainwatch::ops {
namespace {

std::string Seconds(std::int64_t seconds) { return std::to_string(seconds) + " s"; }

void AddUnreadFiles(const SourceSnapshot& source, std::vector<BlindSpot>& spots) {
  for (const StreamSnapshot& file : source.files) {
    // Against what was read, not `offset`: a bar's line has no newline until it closes, and a
    // stalled bar is the job's matter.
    if (!file.size || *file.size <= file.read_offset || file.gone ||
        file.seconds_since_output < kUnreadFileSeconds) {
      continue;
    }
    spots.push_back({std::string(kBlindUnreadFile), file.name,
                     std::to_string(*file.size - file.read_offset) +
                         " bytes written and not read, no line read for " +
                         Seconds(file.seconds_since_output) + " (source " + source.name + ")"});
  }
}

}  // namespace

std::vector<BlindSpot> BlindSpots(const DaemonSnapshot& snapshot) {
  std::vector<BlindSpot> spots;
  for (const SourceSnapshot& source : snapshot.sources) {
    AddUnreadFiles(source, spots);
    if (source.kmsg_running == false) {
      spots.push_back({std::string(kBlindKmsgNotRead), source.name,
                       "the kernel log is not read: driver and storage messages go unseen"});
    }
  }
  if (snapshot.oldest_work_seconds >= kWorkerStuckSeconds) {
    spots.push_back({std::string(kBlindWorkerStuck), "thread pool",
                     "a worker has been busy for " + Seconds(snapshot.oldest_work_seconds) +
                         ": wedged on a hung file system or device? Collectors, captures and "
                         "peer polls may wait for it"});
  }
  if (snapshot.process_watch_stalled_seconds) {
    spots.push_back({std::string(kBlindProcessWatchStalled), "process watch",
                     "its look at the ranks' states has not ended for " +
                         Seconds(*snapshot.process_watch_stalled_seconds) +
                         ": a rank stuck in the kernel may go unseen"});
  }
  if (snapshot.loop_lag_seconds >= kLoopSlowSeconds) {
    spots.push_back({std::string(kBlindLoopSlow), "event loop",
                     "its tick came " +
                         std::to_string(std::lround(snapshot.loop_lag_seconds * 1000)) +
                         " ms late within the last minute: reads, timers and status waited"});
  }
  return spots;
}

}  // namespace trainwatch::ops
