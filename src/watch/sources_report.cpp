// What the rest of the daemon reads of the sources: the facts a capture needs
// (capture::AddJobFacts), what each stream shows for the incidents' lifecycle, the status and
// metrics snapshot (ops::SnapshotOf), and the activity number that says whether the metrics
// moved.
#include <algorithm>
#include <set>

#include "capture/job_facts.h"
#include "ops/incident_lifecycle.h"
#include "ops/source_snapshot.h"
#include "watch/sources.h"

namespace trainwatch::watch {

void Sources::FillCapture(capture::CaptureRequest& request) {
  std::vector<WatchedSource*> all;
  ForEachSource([&](WatchedSource& source) { all.push_back(&source); });
  capture::AddJobFacts(all, request, env_.SteadyNow(), env_.WallNow());
  // The roster adds the ranks seen under the writers' launchers (gone ones included) and how
  // each remembered process ended.
  for (source::WriterProcess& process : roster_.Remembered([this](int pid) {
         auto found = oom_killed_.find(pid);
         return found == oom_killed_.end() ? std::string() : found->second;
       })) {
    auto same =
        std::find_if(request.remembered.begin(), request.remembered.end(),
                     [&](const source::WriterProcess& known) { return known.pid == process.pid; });
    if (same == request.remembered.end()) {
      request.remembered.push_back(std::move(process));
    } else if (same->exit_cause.empty()) {
      same->exit_cause = process.exit_cause;
    }
  }
}

namespace {

// A stream's furthest step: its step lines' count (a global step, comparable across restarts
// that resume from a checkpoint), else its latest bar's, by the bar's desc as printed ("Epoch
// 3"): a bar of another epoch is another bar.
std::optional<detect::JobStep> StepOf(const detect::ProgressTracker& progress) {
  std::optional<detect::JobStep> step;
  for (const auto& [key, bar] : progress.bars()) {
    if (key.starts_with("step:") && (!step || bar.count > step->count)) {
      step = detect::JobStep{"step", bar.count};
    }
  }
  if (!step) {
    if (const detect::Bar* latest = progress.Latest()) {
      step = detect::JobStep{latest->label, latest->count};
    }
  }
  return step;
}

}  // namespace

std::optional<detect::JobStep> Sources::FurthestStep(const detect::Incident& incident) {
  std::set<std::string, std::less<>> streams;
  for (const detect::Firing& firing : incident.firings) {
    streams.insert(ops::StreamKey(firing.source, firing.stream));
  }
  std::optional<detect::JobStep> own;
  std::optional<detect::JobStep> latest;
  SteadyTime latest_at{};
  ForEachSource([&](WatchedSource& source) {
    source.ForEachStream([&](detect::StreamDetector& stream, source::TailedFile*) {
      const std::optional<detect::JobStep> step = StepOf(stream.progress());
      if (!step) {
        return;
      }
      if (streams.contains(ops::StreamKey(stream.identity().source, stream.identity().name))) {
        if (!own || (own->label == step->label && step->count > own->count)) {
          own = step;
        }
      } else if (!latest || stream.progress().last_advance() > latest_at) {
        latest = step;
        latest_at = stream.progress().last_advance();
      }
    });
  });
  return own ? own : latest;
}

std::vector<source::WriterProcess> Sources::KnownWriters() {
  std::vector<source::WriterProcess> writers;
  std::set<int> seen;
  ForEachSource([&](WatchedSource& source) {
    source.ForEachStream([&](detect::StreamDetector& stream, source::TailedFile*) {
      for (const source::WriterProcess& writer : stream.writers()) {
        if (seen.insert(writer.pid).second) {
          writers.push_back(writer);
        }
      }
    });
  });
  return writers;
}

void Sources::ForEachActivity(const std::function<void(const ops::StreamActivity&)>& visit) {
  const SteadyTime now = env_.SteadyNow();
  ForEachSource([&](WatchedSource& source) {
    source.ForEachStream([&](detect::StreamDetector& stream, source::TailedFile*) {
      const detect::ProgressTracker& progress = stream.progress();
      const detect::SpreadRuns& spread = stream.spread_runs();
      visit({stream.identity().source, stream.identity().name, progress.Latest(),
             progress.last_advance(), stream.last_output(), stream.created(), &stream.writers(),
             progress.AnySlow() || spread.SaysSlow(now), spread.last_even_report()});
    });
  });
}

std::vector<ops::SourceSnapshot> Sources::Snapshot(SteadyTime now, WallTime wall_now) {
  std::vector<ops::SourceSnapshot> snapshots;
  ForEachSource(
      [&](WatchedSource& source) { snapshots.push_back(ops::SnapshotOf(source, now, wall_now)); });
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

}  // namespace trainwatch::watch
