// Sources: the configured sources (and `wrap`'s command) of one config, each a
// detect::WatchedSource, kept together across reloads; when their time-based checks run (each
// second, and for tracebacks whose writer went quiet); which processes write which file (a
// WriterScan); where each file resumes after a restart. Firings go to the owner's callback.
// Owned by the Daemon; loop thread only.
#pragma once

#include <uv.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "capture/capturer.h"
#include "config/daemon_config.h"
#include "core/env.h"
#include "detect/watched_source.h"
#include "ops/daemon_snapshot.h"
#include "ops/incident_lifecycle.h"
#include "ops/incident_log.h"
#include "source/child_end.h"
#include "source/process_exits.h"
#include "source/tail_state.h"
#include "source/writer_scan.h"
#include "watch/blocked_watch.h"
#include "watch/process_roster.h"

namespace trainwatch::watch {

using detect::WatchedSource;

// Sources compiled from a config, not yet running: a reload that fails to compile changes
// nothing.
struct PreparedSources {
  std::vector<std::unique_ptr<WatchedSource>> sources;
  std::unique_ptr<WatchedSource> wrap;  // when a command is wrapped
};
Result<PreparedSources> PrepareSources(const config::DaemonConfig& config,
                                       const std::vector<rules::Rule>& rules, bool wrapping,
                                       const std::string& cache_dir,
                                       std::vector<Diagnostic>& notes);

class Sources {
 public:
  // Firings of `stream` (null for events that hold no line of it: stalls, silence, exits).
  using OnFirings =
      std::function<void(std::vector<detect::Firing>& firings, detect::StreamDetector* stream)>;
  // `fired`: lines of files already part of written incidents (not to fire again); `saved`:
  // where files were at the last stop, `first_start` when there was no state at all.
  // `kmsg_loop` reads the kernel log (a libuv producer outside the Env); only kmsg sources use
  // it.
  Sources(Env& env, uv_loop_t* kmsg_loop, std::string kmsg_device, OnFirings on_firings,
          std::function<void()> save_soon, ops::IncidentHistory fired,
          std::vector<source::SavedTail> saved, bool first_start);
  ~Sources();
  Sources(const Sources&) = delete;
  Sources& operator=(const Sources&) = delete;

  // A stream went on after the crash it reported (see WatchedSource::Outlet::crash_caught).
  using OnCrashCaught = std::function<void(const detect::StreamDetector& stream)>;
  void set_on_crash_caught(OnCrashCaught on_crash_caught) {
    on_crash_caught_ = std::move(on_crash_caught);
  }
  // Whether unknown writers are wanted soon (an unresolved incident waits for its job's
  // restart): looked for every 2 s rather than every 30 s.
  void set_writers_urgent(std::function<bool()> urgent) { writers_urgent_ = std::move(urgent); }
  // Every source's logs are held open within `budget`; before Apply.
  void UseDescriptorBudget(std::shared_ptr<source::DescriptorBudget> budget) {
    descriptors_ = std::move(budget);
  }

  // Takes the sources of a (re)loaded config. Sources that keep their name keep their files,
  // offsets and detector state; new ones start; removed ones close.
  void Apply(PreparedSources prepared, const config::DaemonConfig& config);
  // Each second: reads what inotify missed, checks writers, stalls and silence.
  void Tick(SteadyTime now);
  void RequestWriterScan() { writer_scan_.Request(); }
  // Stops reading and closes every file (no flush: the next start reads on from the offsets).
  void Close();

  // The positions to persist.
  void SaveTo(source::TailState& state) const;
  // The open incident was written: no stream needs to hold its offsets back any more.
  void ReleaseIncidentHolds();
  // Whether some stream is still reading a traceback (it fires once its writer is quiet).
  bool AnyTracebackOpen();
  // Calls visit(activity) with what each stream shows now, for the incidents' lifecycle.
  void ForEachActivity(const std::function<void(const ops::StreamActivity&)>& visit);
  // The processes known to write the streams, each once.
  std::vector<source::WriterProcess> KnownWriters();
  // Looks for the ranks under the known writers now (the roster keeps them after they exit).
  void LookForRanks();
  // What a capture needs to know of the jobs: log files, their processes, watched dirs.
  void FillCapture(capture::CaptureRequest& request);
  // The furthest step the job of `incident` reached: on the streams it fired on, else on the
  // stream whose bars moved last (a kernel log's failure has none of its own).
  std::optional<detect::JobStep> FurthestStep(const detect::Incident& incident);
  std::vector<ops::SourceSnapshot> Snapshot(SteadyTime now, WallTime wall_now);
  // Moves whenever anything Snapshot's metrics show may have.
  std::uint64_t Activity() const;
  std::size_t size() const { return sources_.size(); }
  std::size_t files() const;

  // `wrap`: the command's two streams, written by `pid` (named `comm`). False when they could
  // not be made (logged).
  bool StartWrap(int pid, const std::string& comm);
  void OnWrapBatch(int index, const source::LineBatch& batch);
  void OnWrapPending(int index, std::string_view pending);
  // The command ended: its tracebacks close, `exit` rules judge its end.
  void OnWrapEnded(const source::ChildEnd& end, const std::string& who);
  // A line for the `processes` sources about `writer` (null: no one process, as a device tool
  // that does not answer, watch/device_tool_watch.h); dropped where none is configured.
  void TellProcessesSources(const source::WriterProcess* writer, const std::string& line);
  // Never tail `path` (the copy of the wrapped command's output: it comes through the pipe).
  void Exclude(const std::string& path);
  // The process watch's looks have not ended for this long (BlockedWatch::StalledFor).
  std::optional<std::chrono::seconds> ProcessWatchStalledFor(SteadyTime now) const {
    return blocked_.StalledFor(now);
  }

 private:
  void Start(WatchedSource& source);
  WatchedSource::Outlet OutletFor();
  void CloseQuietTracebacks();
  void OnWritersFound(const source::WriterScan::Found& found);
  // The `processes` sources' look at the jobs' processes, when one is configured.
  void LookForBlocked(SteadyTime now);
  void OnBlocked(const std::vector<BlockedWatch::Report>& reports);
  // The jobs' living processes: the roster's, and the known writers (start time 0: unknown).
  std::map<pid_t, ProcessRoster::Alive> JobProcessesByPid();
  template <typename F>
  void ForEachSource(F&& visit) {
    for (auto& source : sources_) {
      visit(*source);
    }
    if (wrap_) {
      visit(*wrap_);
    }
  }

  Env& env_;
  uv_loop_t* kmsg_loop_;
  std::string kmsg_device_;
  OnFirings on_firings_;
  OnCrashCaught on_crash_caught_;
  std::function<bool()> writers_urgent_;
  std::function<void()> save_soon_;
  ops::IncidentHistory fired_;
  std::vector<source::SavedTail> saved_;
  bool first_start_;
  config::WatchConfig watch_;
  std::size_t context_lines_ = 0;
  std::vector<std::unique_ptr<WatchedSource>> sources_;
  std::unique_ptr<WatchedSource> wrap_;
  std::vector<std::string> excluded_;
  std::shared_ptr<source::DescriptorBudget> descriptors_;
  // Pids the kernel's OOM killer killed, with its line: evidence for a writer's death. The
  // latest few only (a victim's writer is judged within a second or two of its kill).
  std::map<int, std::string> oom_killed_;
  std::vector<int> oom_order_;
  // Slurm step daemons found before they titled themselves ("slurmstepd: [JOB.STEP]", which
  // names a batch job: capture::JobEnvironOf), and how often each was looked at again.
  std::map<int, int> untitled_stepds_;
  source::WriterScan writer_scan_;
  SteadyTime last_writer_scan_{};
  // The jobs' processes, kept after they exit, and how they ended.
  ProcessRoster roster_;
  SteadyTime last_roster_look_{};
  source::ProcessExitWatch exits_;
  BlockedWatch blocked_;                        // its lines go to the `processes` sources
  std::unique_ptr<LoopTimer> writer_soon_;      // a scan soon after new files appear
  std::unique_ptr<LoopTimer> traceback_timer_;  // closes tracebacks whose writer went quiet
};

}  // namespace trainwatch::watch
