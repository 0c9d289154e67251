#include "capture/job_facts.h"

#include <set>

#include "source/glob.h"

namespace trainwatch::capture {

void AddJobFacts(const std::vector<detect::WatchedSource*>& sources, CaptureRequest& request) {
  std::set<int> pids(request.pids.begin(), request.pids.end());
  for (detect::WatchedSource* source : sources) {
    source->ForEachStream([&](detect::StreamDetector& stream, source::TailedFile* file) {
      if (file != nullptr) {
        request.log_files.push_back(file->tail.path());
      }
      for (const source::WriterProcess& writer : stream.writers()) {
        pids.insert(writer.pid);
        request.remembered.push_back(writer);
      }
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
