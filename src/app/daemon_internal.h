// The daemon's internals, shared by the files that implement it (daemon.cpp: lifecycle,
// config and state; daemon_sources.cpp: sources and streams; daemon_detectors.cpp: the
// time-based detectors; daemon_reporting.cpp: incidents, hooks, status and the control
// socket; daemon_metrics.cpp: the Prometheus textfile).
// Not for use outside src/app/daemon*.cpp. Loop thread only.
#pragma once

#include <uv.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "app/capture.h"
#include "app/control_server.h"
#include "app/daemon.h"
#include "app/hook_runner.h"
#include "app/incident_log.h"
#include "app/kmsg_reader.h"
#include "app/prometheus_text.h"
#include "app/stream.h"
#include "app/tail_set.h"
#include "app/wrapped_child.h"
#include "config/daemon_config.h"
#include "core/unique_fd.h"
#include "core/uv_handle.h"
#include "detect/incident_builder.h"
#include "rules/compiled_rules.h"
#include "rules/rule.h"
#include "source/tail_state.h"
#include "source/writers.h"

namespace trainwatch::app::daemon_internal {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr auto kTick = std::chrono::seconds(1);
// A traceback is over when its writer has been quiet this long: Python prints one at once.
constexpr auto kTracebackQuiet = std::chrono::milliseconds(300);
constexpr auto kStateSaveDelay = std::chrono::milliseconds(100);
// New files are scanned for at once; a file that grows while no writer is known is scanned
// for at most this often (its writer may be in another PID namespace, invisible to us).
constexpr auto kWriterScanEvery = std::chrono::seconds(30);
// The writer of a bar must have been seen updating it this recently for its disappearance to
// count as a crash: a bar left behind long ago by a job that went on to other output is not.
constexpr auto kWriterExitWindow = std::chrono::minutes(10);

// Everything a config file brings: the config itself and the rules it names.
struct Setup {
  config::DaemonConfig config;
  std::vector<rules::Rule> rules;
};

struct SourceState {
  config::SourceConfig config;
  std::shared_ptr<const rules::CompiledRules> line_rules;
  std::vector<rules::Rule> progress_rules;
  std::vector<rules::Rule> silence_rules;
  std::vector<rules::Rule> exit_rules;
  std::unique_ptr<TailSet> tails;
  std::unique_ptr<KmsgReader> kmsg;
  std::unique_ptr<Stream> kmsg_stream;
  std::vector<std::unique_ptr<Stream>> wrap_streams;  // stdout, stderr of `wrap`
  Clock::time_point last_bytes = Clock::now();
  std::uint64_t lines = 0;  // read from all its streams since the start, closed ones too
  std::uint64_t bytes = 0;
  std::set<std::string> silence_reported;
  bool wrapped_ended = false;
};

// Counted since the daemon started, for the metrics textfile.
struct Counters {
  std::map<std::string, std::uint64_t> firings_by_rule;    // every firing, cooldown or not
  std::map<std::string, std::uint64_t> incidents_by_kind;  // crash, hang, device, manual...
  std::uint64_t bundles_written = 0;
  std::uint64_t bundle_bytes = 0;
  std::uint64_t bundles_failed = 0;   // incidents whose capture wrote no bundle
  std::uint64_t bundles_deleted = 0;  // by retention
  std::map<std::string, std::uint64_t> collector_timeouts;  // killed at deadline or abandoned
};

class Daemon {
 public:
  explicit Daemon(DaemonOptions options) : options_(std::move(options)) {}
  int Run();

 private:
  Status Apply(Setup setup, bool initial);
  Result<std::unique_ptr<SourceState>> MakeSource(const config::SourceConfig& config,
                                                  const std::vector<rules::Rule>& rules,
                                                  const std::string& cache_dir,
                                                  std::vector<Diagnostic>& notes);
  void StartSource(SourceState& source);
  std::unique_ptr<Stream> MakeStream(SourceState& source, const std::string& name,
                                     source::FileId id, source::Fingerprint fingerprint,
                                     bool is_file);
  void OnBatch(SourceState& source, Stream& stream, const source::LineBatch& batch,
               std::uint64_t offset);
  void OnFirings(std::vector<detect::Firing>& firings, Stream* stream);
  void ScheduleSettle();
  void WriteSettled();
  // What a manual snapshot adds to a capture.
  struct CaptureOptions {
    std::string container;
    std::vector<std::string> extra_logs;
    std::vector<std::string> extra_paths;
  };
  using CaptureDone = std::function<void(const CaptureOutcome&)>;
  // Records the incident, then captures its bundle (`then` gets the outcome).
  void WriteIncident(detect::Incident& incident, const CaptureOptions& options, CaptureDone then);
  void StartCapture(const detect::Incident& incident, const CaptureOptions& options,
                    CaptureDone then);
  void OnCaptured(const CaptureOutcome& outcome);
  // Runs the on_incident hooks of `incident` (firings dropped) with the capture's outcome.
  void RunHooks(const detect::Incident& incident, const CaptureOutcome& outcome);
  // wrap: stops once the command ended and its incident, bundle and hooks are done.
  void StopIfWrapDone();
  // Takes a reloaded metrics config (removes a textfile it no longer names).
  void ReconfigureMetrics();
  // From the tick: writes the textfile every `metrics.interval`.
  void MaybeWriteMetrics(Clock::time_point now);
  void WriteMetrics();
  std::vector<MetricFamily> MetricFamilies() const;
  // A number that changes whenever anything the metrics show may have changed.
  std::uint64_t MetricsActivity() const;
  void Tick();
  void CheckStalls(SourceState& source, Stream& stream, Clock::time_point now);
  void CheckSilence(SourceState& source, Clock::time_point now);
  void CheckWriters();
  void StartWriterScan();
  void JobEnded(SourceState& source, Stream& stream,
                const std::vector<source::WriterProcess>& gone);
  void CloseQuietTracebacks();
  void ArmTracebackTimer();
  void SaveStateSoon();
  void SaveState();
  void Reload();
  void Stop(int exit_code);
  // Runs the wrapped command, its output as two streams of the "wrap" source.
  void StartWrap();
  void OnChildEnd(const ChildEnd& end);
  void UpdateStatus();
  void SwapRules(SourceState& source);
  void HandleControl(const std::string& request, ControlServer::Reply reply);
  json StatusJson() const;
  template <typename F>
  void ForEachStream(F&& visit);

  DaemonOptions options_;
  uv_loop_t loop_{};
  Setup setup_;
  std::vector<std::unique_ptr<SourceState>> sources_;
  std::unique_ptr<SourceState> wrap_source_;
  std::unique_ptr<WrappedChild> child_;
  std::optional<ChildEnd> child_end_;
  detect::IncidentBuilder incidents_{{}};
  std::unique_ptr<IncidentLog> incident_log_;
  IncidentHistory history_;
  std::vector<source::SavedTail> saved_;
  bool first_start_ = true;
  UniqueFd state_lock_;
  ControlServer control_;
  UvHandle<uv_timer_t> tick_;
  UvHandle<uv_timer_t> settle_;
  UvHandle<uv_timer_t> traceback_timer_;
  UvHandle<uv_timer_t> save_timer_;
  UvHandle<uv_timer_t> watchdog_;
  UvHandle<uv_timer_t> writer_soon_;
  std::vector<UvHandle<uv_signal_t>> signals_;
  Clock::time_point last_writer_scan_{};
  bool writer_scan_running_ = false;
  bool writer_scan_again_ = false;
  bool stopping_ = false;
  bool guest_ = false;  // wrap beside a daemon that holds the state_dir
  bool stop_after_settle_ = false;
  int exit_code_ = 0;
  std::uint64_t incidents_written_ = 0;
  std::string last_incident_;
  std::unique_ptr<Capturer> capturer_;
  int captures_running_ = 0;
  std::unique_ptr<HookRunner> hooks_;
  Counters counters_;
  std::string metrics_error_;  // the last failure to write the textfile, logged once
  std::string metrics_path_;   // the textfile last written, removed when the config drops it
  std::string metrics_text_;   // what it holds
  std::uint64_t metrics_activity_ = 0;  // MetricsActivity() when it was written
  std::uint64_t setups_applied_ = 0;    // the start and each reload
  Clock::time_point next_metrics_{};
  bool said_waiting_ = false;                           // wrap: "waiting for hooks" was logged
  std::map<std::string, std::uint64_t> unlogged_;       // per rule: firings since last logged
  std::map<std::string, std::uint64_t> quiet_firings_;  // per rule: firings opening nothing
  std::string last_status_;
  Clock::time_point started_ = Clock::now();
  std::chrono::system_clock::time_point started_wall_ = std::chrono::system_clock::now();
};

template <typename F>
void Daemon::ForEachStream(F&& visit) {
  auto each = [&](SourceState& source) {
    if (source.tails) {
      for (auto& [id, file] : source.tails->files()) {
        visit(source, *file->stream, file.get());
      }
    }
    if (source.kmsg_stream) {
      visit(source, *source.kmsg_stream, nullptr);
    }
    for (auto& stream : source.wrap_streams) {
      visit(source, *stream, nullptr);
    }
  };
  for (auto& source : sources_) {
    each(*source);
  }
  if (wrap_source_) {
    each(*wrap_source_);
  }
}

}  // namespace trainwatch::app::daemon_internal
