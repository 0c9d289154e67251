#include "capture/job_facts.h"

#include <algorithm>
#include <set>

#include "diagnose/suspects.h"
#include "source/glob.h"

namespace trainwatch::capture {
namespace {

// Per rank (named by a bar's prefix, else by the stream's writers) its bars as last seen.
void AddRankProgress(const detect::ProgressTracker& progress, const std::vector<int>& writers,
                     detect::SteadyTime now, std::vector<diagnose::RankProgress>& out) {
  for (const auto& [key, bar] : progress.bars()) {
    diagnose::RankProgress rank_progress{
        diagnose::RankOfLine(bar.text),
        {},
        key,
        bar.count,
        bar.advanced ? std::optional(std::chrono::duration<double>(now - bar.last_advance).count())
                     : std::nullopt};
    if (!rank_progress.rank) {
      if (writers.empty()) {
        continue;
      }
      rank_progress.pids = writers;
    }
    out.push_back(std::move(rank_progress));
  }
}

// The bars of a stream as timeline lanes: each advance back from the latest, through the
// intervals the tracker keeps.
void AddLanes(const detect::StreamDetector& stream, const std::vector<int>& writers,
              detect::SteadyTime now, WallTime wall_now, std::vector<ProgressLane>& out) {
  auto wall = [&](detect::SteadyTime at) {
    return wall_now - std::chrono::duration_cast<WallTime::duration>(now - at);
  };
  for (const auto& [key, bar] : stream.progress().bars()) {
    ProgressLane lane;
    lane.stream = stream.identity().name;
    lane.bar = detect::DescribeBar(bar);
    lane.rank = diagnose::RankOfLine(bar.text);
    lane.pids = writers;
    lane.first_seen = wall(bar.first_seen);
    lane.complete = bar.complete;
    if (bar.advanced) {
      detect::SteadyTime at = bar.last_advance;
      lane.advances.push_back(wall(at));
      for (auto interval = bar.intervals.rbegin(); interval != bar.intervals.rend(); ++interval) {
        at -= *interval;
        lane.advances.push_back(wall(at));
      }
      std::reverse(lane.advances.begin(), lane.advances.end());
    }
    out.push_back(std::move(lane));
  }
}

}  // namespace

void AddJobFacts(const std::vector<detect::WatchedSource*>& sources, CaptureRequest& request,
                 detect::SteadyTime now, WallTime wall_now) {
  std::set<int> pids(request.pids.begin(), request.pids.end());
  // A slow incident is one stream's pace: its job is the one writing that stream. Other jobs on
  // the node (their own logs under the same globs) run at their own pace and are not its
  // ranks: seeded with them, the rank map would cap and mix several jobs' ranks, and the
  // straggler named would be another job's.
  const bool firings_name_the_job =
      request.incident.kind == rules::RuleKind::kSlow &&
      std::any_of(request.incident.firings.begin(), request.incident.firings.end(),
                  [](const detect::Firing& firing) { return !firing.writers.empty(); });
  for (detect::WatchedSource* source : sources) {
    source->ForEachStream([&](detect::StreamDetector& stream, source::TailedFile* file) {
      if (file != nullptr) {
        request.log_files.push_back(file->tail.path());
      }
      std::vector<int> writers;
      for (const source::WriterProcess& writer : stream.writers()) {
        if (!firings_name_the_job) {
          pids.insert(writer.pid);
          request.remembered.push_back(writer);
        }
        writers.push_back(writer.pid);
      }
      AddRankProgress(stream.progress(), writers, now, request.progress);
      AddLanes(stream, writers, now, wall_now, request.lanes);
    });
    for (const std::string& pattern : source->config().paths) {
      request.watched_dirs.push_back(source::LiteralDirOf(pattern));
    }
  }
  for (const detect::Firing& firing : request.incident.firings) {
    for (const source::WriterProcess& writer : firing.writers) {
      pids.insert(writer.pid);  // gone by now, perhaps, but named in the manifest
      request.remembered.push_back(writer);
    }
  }
  request.pids.assign(pids.begin(), pids.end());
  if (request.lanes.size() > kMaxLanes) {
    // The bars that moved last tell of this failure; a finished epoch's bar from hours ago not.
    std::stable_sort(
        request.lanes.begin(), request.lanes.end(),
        [](const ProgressLane& a, const ProgressLane& b) {
          const WallTime last_a = a.advances.empty() ? a.first_seen : a.advances.back();
          const WallTime last_b = b.advances.empty() ? b.first_seen : b.advances.back();
          return last_a > last_b;
        });
    request.lanes.resize(kMaxLanes);
  }
}

}  // namespace trainwatch::capture
