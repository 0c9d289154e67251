#include "capture/job_facts.h"

#include <set>

#include "diagnose/suspects.h"
#include "source/glob.h"

namespace trainwatch::capture {
namespace {

// Per rank (named by a bar's prefix, else by the stream's writers) its bars as last seen.
void AddRankProgress(const detect::ProgressTracker& progress, const std::vector<int>& writers,
                     std::vector<diagnose::RankProgress>& out) {
  for (const auto& [key, bar] : progress.bars()) {
    diagnose::RankProgress rank_progress{diagnose::RankOfLine(bar.text), {}, key, bar.count};
    if (!rank_progress.rank) {
      if (writers.empty()) {
        continue;
      }
      rank_progress.pids = writers;
    }
    out.push_back(std::move(rank_progress));
  }
}

}  // namespace

void AddJobFacts(const std::vector<detect::WatchedSource*>& sources, CaptureRequest& request) {
  std::set<int> pids(request.pids.begin(), request.pids.end());
  for (detect::WatchedSource* source : sources) {
    source->ForEachStream([&](detect::StreamDetector& stream, source::TailedFile* file) {
      if (file != nullptr) {
        request.log_files.push_back(file->tail.path());
      }
      std::vector<int> writers;
      for (const source::WriterProcess& writer : stream.writers()) {
        pids.insert(writer.pid);
        writers.push_back(writer.pid);
        request.remembered.push_back(writer);
      }
      AddRankProgress(stream.progress(), writers, request.progress);
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
}

}  // namespace trainwatch::capture
