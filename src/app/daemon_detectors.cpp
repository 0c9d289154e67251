// The time-based detectors, run each tick: progress stalls, silence, writers that exit.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <cerrno>

#include "app/daemon_internal.h"

namespace trainwatch::app::daemon_internal {
namespace {

std::string Describe(const detect::Bar& bar) {
  std::string name = bar.label.empty() ? "progress bar" : "'" + bar.label + "'";
  std::string where = std::to_string(bar.count);
  if (bar.total) {
    where += "/" + std::to_string(*bar.total);
  }
  return name + " at " + where;
}

std::string SecondsAgo(Clock::time_point then, Clock::time_point now) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - then).count()) + "s";
}

bool Alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

// One configured source and its live state.

}  // namespace

void Daemon::CheckStalls(SourceState& source, Stream& stream, Clock::time_point now) {
  for (std::size_t i = 0; i < source.progress_rules.size(); ++i) {
    const rules::Rule& rule = source.progress_rules[i];
    const auto& progress = std::get<rules::ProgressDetector>(rule.detector);
    for (const detect::Bar* bar :
         stream.progress().TakeStalled(i, progress.stall_after, progress.startup_grace, now)) {
      detect::Event event;
      event.rule_id = rule.id;
      event.kind = rule.kind;
      event.line = bar->line;
      event.text = bar->text;
      event.summary = Describe(*bar) +
                      (bar->advanced ? " has not advanced for " : " has not started for ") +
                      SecondsAgo(bar->last_advance, now);
      std::vector<detect::Firing> firings{
          stream.MakeFiring(std::move(event), std::chrono::system_clock::now())};
      OnFirings(firings, nullptr);
    }
  }
}

void Daemon::CheckSilence(SourceState& source, Clock::time_point now) {
  if (source.silence_rules.empty()) {
    return;
  }
  // Silence means something only where output was expected: a stream exists and its job has
  // not ended (a finished job is quiet for good reason).
  Stream* live = nullptr;
  ForEachStream([&](SourceState& owner, Stream& stream, TailedFile*) {
    if (&owner == &source && stream.live() && !stream.progress().ended() && live == nullptr) {
      live = &stream;
    }
  });
  if (live == nullptr || source.config.kmsg) {
    return;
  }
  for (const rules::Rule& rule : source.silence_rules) {
    const auto& silence = std::get<rules::SilenceDetector>(rule.detector);
    if (now - source.last_bytes < silence.after || source.silence_reported.count(rule.id)) {
      continue;
    }
    source.silence_reported.insert(rule.id);
    detect::Event event;
    event.rule_id = rule.id;
    event.kind = rule.kind;
    event.text = "no output from source " + source.config.name + " for " +
                 SecondsAgo(source.last_bytes, now);
    event.summary = event.text;
    std::vector<detect::Firing> firings{
        live->MakeFiring(std::move(event), std::chrono::system_clock::now())};
    OnFirings(firings, nullptr);
  }
}

void Daemon::JobEnded(SourceState& source, Stream& stream,
                      const std::vector<source::WriterProcess>& gone) {
  stream.progress().EndJob();
  const detect::Bar* bar = stream.progress().Latest();
  std::string who;
  for (const source::WriterProcess& writer : gone) {
    who += (who.empty() ? "" : ", ") + std::to_string(writer.pid) + " (" + writer.comm + ")";
  }
  spdlog::info("source {}: the writers of {} exited: {}", source.config.name,
               stream.identity().name, who);
  // A bar that was still moving and was the last thing its writer printed: the process died
  // mid-training without a word (the OOM killer's SIGKILL leaves no traceback).
  if (bar == nullptr || bar->complete || bar->line < stream.last_line() ||
      Clock::now() - bar->last_update > kWriterExitWindow) {
    return;
  }
  detect::Event event;
  event.rule_id = "writer.exited";
  event.kind = rules::RuleKind::kCrash;
  event.line = bar->line;
  event.text = bar->text;
  event.summary = "writer exited: " + who + " stopped with " + Describe(*bar) +
                  ", without an error in the log (killed? OOM killer?)";
  std::vector<detect::Firing> firings{
      stream.MakeFiring(std::move(event), std::chrono::system_clock::now())};
  firings.back().writers = gone;  // gone, but the capture stage should know whom it lost
  OnFirings(firings, nullptr);
}

void Daemon::CheckWriters() {
  for (auto& source : sources_) {
    if (!source->tails) {
      continue;
    }
    for (auto& [id, file] : source->tails->files()) {
      std::vector<source::WriterProcess>& writers = file->stream->writers();
      if (writers.empty()) {
        continue;
      }
      std::vector<source::WriterProcess> gone;
      std::erase_if(writers, [&](const source::WriterProcess& writer) {
        if (Alive(writer.pid)) {
          return false;
        }
        gone.push_back(writer);
        return true;
      });
      if (!gone.empty() && writers.empty()) {
        // Read what the writer left last, then judge.
        source->tails->ReadNow(*file);
        JobEnded(*source, *file->stream, gone);
      }
    }
  }
}

void Daemon::StartWriterScan() {
  if (stopping_) {
    return;
  }
  if (writer_scan_running_) {
    writer_scan_again_ = true;  // files came after this scan began
    return;
  }
  struct Scan {
    uv_work_t request{};
    Daemon* daemon = nullptr;
    std::set<source::FileId> files;
    std::map<source::FileId, std::vector<source::WriterProcess>> found;
  };
  auto* scan = new Scan;
  scan->daemon = this;
  for (auto& source : sources_) {
    if (source->tails) {
      for (auto& [id, file] : source->tails->files()) {
        scan->files.insert(id);
      }
    }
  }
  if (scan->files.empty()) {
    delete scan;
    return;
  }
  scan->request.data = scan;
  writer_scan_running_ = true;
  last_writer_scan_ = Clock::now();
  // Reading every process's descriptors takes milliseconds: the thread pool does it.
  uv_queue_work(
      &loop_, &scan->request,
      [](uv_work_t* request) {
        auto* scan = static_cast<Scan*>(request->data);
        scan->found = source::FindWriters(scan->files);
        for (auto& [id, writers] : scan->found) {
          for (source::WriterProcess& writer : writers) {
            source::RememberProcess(writer);
          }
        }
      },
      [](uv_work_t* request, int) {
        std::unique_ptr<Scan> scan(static_cast<Scan*>(request->data));
        Daemon* self = scan->daemon;
        self->writer_scan_running_ = false;
        if (self->stopping_) {
          return;
        }
        if (std::exchange(self->writer_scan_again_, false)) {
          self->StartWriterScan();
        }
        for (auto& source : self->sources_) {
          if (!source->tails) {
            continue;
          }
          for (auto& [id, file] : source->tails->files()) {
            auto found = scan->found.find(id);
            if (found == scan->found.end() || found->second.empty()) {
              continue;  // exits are noticed by CheckWriters, process by process
            }
            file->stream->set_writers(found->second);
          }
        }
      });
}

void Daemon::Tick() {
  const Clock::time_point now = Clock::now();
  for (auto& source : sources_) {
    if (source->tails) {
      source->tails->Sweep(now);
    }
  }
  CheckWriters();
  ForEachStream([&](SourceState& source, Stream& stream, TailedFile*) {
    if (!source.progress_rules.empty() && stream.live()) {
      CheckStalls(source, stream, now);
    }
  });
  for (auto& source : sources_) {
    CheckSilence(*source, now);
  }
  if (wrap_source_) {
    CheckSilence(*wrap_source_, now);
  }
  UpdateStatus();
  MaybeWriteMetrics(now);
}

}  // namespace trainwatch::app::daemon_internal
