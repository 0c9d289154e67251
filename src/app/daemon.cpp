#include "app/daemon.h"

#include <fcntl.h>
#include <malloc.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>
#include <uv.h>

#include <csignal>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "app/control_server.h"
#include "app/incident_log.h"
#include "app/kmsg_reader.h"
#include "app/rule_paths.h"
#include "app/stream.h"
#include "app/tail_set.h"
#include "app/wrapped_child.h"
#include "config/daemon_config.h"
#include "core/unique_fd.h"
#include "core/uv_handle.h"
#include "detect/incident_builder.h"
#include "rules/compiled_rules.h"
#include "rules/rule_loader.h"
#include "source/tail_state.h"
#include "source/writers.h"

namespace trainwatch::app {
namespace {

using nlohmann::json;
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

Result<Setup> LoadSetup(const std::string& config_path) {
  config::ConfigLoad load = config::LoadDaemonConfig(config_path, config::ProcessEnv());
  std::string problems;
  for (const Diagnostic& error : load.errors) {
    problems += FormatDiagnostic(error) + "\n";
  }
  if (!load.config) {
    return Error{problems};
  }
  Setup setup{std::move(*load.config), {}};
  const std::vector<std::string> rule_paths =
      setup.config.rule_paths.empty() ? DefaultRulePaths() : setup.config.rule_paths;
  rules::LoadedRules loaded = rules::LoadRulePaths(rule_paths);
  for (const Diagnostic& error : loaded.errors) {
    problems += FormatDiagnostic(error) + "\n";
  }
  if (!problems.empty()) {
    return Error{problems};
  }
  setup.rules = std::move(loaded.rules);
  return setup;
}

bool AnyTag(const rules::Rule& rule, const std::vector<std::string>& tags) {
  return std::any_of(tags.begin(), tags.end(),
                     [&](const std::string& t) { return rule.HasTag(t); });
}

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
  void WriteIncident(detect::Incident& incident);
  void Tick();
  void CheckStalls(SourceState& source, Stream& stream, Clock::time_point now);
  void CheckSilence(SourceState& source, Clock::time_point now);
  void CheckWriters(Clock::time_point now);
  void StartWriterScan();
  void JobEnded(SourceState& source, Stream& stream,
                const std::vector<source::WriterProcess>& gone);
  void CloseQuietTracebacks();
  void SaveStateSoon();
  void SaveState();
  void Reload();
  void Stop(int exit_code);
  // Runs the wrapped command, its output as two streams of the "wrap" source.
  void StartWrap();
  void OnChildEnd(const ChildEnd& end);
  void UpdateStatus();
  void SwapRules(SourceState& source);
  std::string HandleControl(const std::string& request);
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
  std::string last_status_;
  Clock::time_point started_ = Clock::now();
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

Result<std::unique_ptr<SourceState>> Daemon::MakeSource(const config::SourceConfig& config,
                                                        const std::vector<rules::Rule>& rules,
                                                        const std::string& cache_dir,
                                                        std::vector<Diagnostic>& notes) {
  auto source = std::make_unique<SourceState>();
  source->config = config;
  Result<std::shared_ptr<const rules::CompiledRules>> compiled =
      rules::CompiledRules::Build(rules, config.tags, &notes, cache_dir);
  if (!compiled) {
    return Error{"source " + config.name + ": " + compiled.error().message};
  }
  source->line_rules = std::move(*compiled);
  for (const rules::Rule& rule : rules) {
    if (!AnyTag(rule, config.tags)) {
      continue;
    }
    if (std::holds_alternative<rules::ProgressDetector>(rule.detector)) {
      source->progress_rules.push_back(rule);
    } else if (std::holds_alternative<rules::SilenceDetector>(rule.detector)) {
      source->silence_rules.push_back(rule);
    } else if (std::holds_alternative<rules::ExitDetector>(rule.detector)) {
      source->exit_rules.push_back(rule);
    }
  }
  return source;
}

std::unique_ptr<Stream> Daemon::MakeStream(SourceState& source, const std::string& name,
                                           source::FileId id, source::Fingerprint fingerprint,
                                           bool is_file) {
  StreamIdentity identity{source.config.name, name, is_file ? id.ToString() : "", fingerprint};
  Result<std::unique_ptr<Stream>> stream =
      Stream::Create(identity, source.line_rules, setup_.config.incident.context_lines,
                     !source.progress_rules.empty());
  if (!stream) {
    spdlog::error("source {}: {}: {}", source.config.name, name, stream.error().message);
    return nullptr;
  }
  if (is_file && writer_soon_ && !uv_is_active(writer_soon_.base())) {
    // Who writes a new file is best learned while the writer is young: a job killed a second
    // after it started must still be known to have died.
    uv_timer_start(
        writer_soon_.get(),
        [](uv_timer_t* timer) {
          if (auto* self = static_cast<Daemon*>(timer->data)) {
            self->StartWriterScan();
          }
        },
        200, 0);
  }
  if (is_file) {
    // Lines of this file that already fired before a restart must not fire again.
    auto [begin, end] = history_.fired.equal_range(identity.file_id);
    if (begin != end) {
      UniqueFd fd(::open(name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
      for (auto it = begin; fd.get() >= 0 && it != end; ++it) {
        const std::optional<source::Fingerprint> now =
            source::ReadFingerprint(fd.get(), it->second.head_bytes);
        if (now && now->hash == it->second.head_hash) {
          (*stream)->SuppressThrough(it->second.line);
        }
      }
    }
  }
  return std::move(*stream);
}

void Daemon::StartSource(SourceState& source) {
  SourceState* state = &source;
  if (source.config.kmsg) {
    source.kmsg_stream = MakeStream(source, "kmsg", {}, {}, false);
    if (source.kmsg_stream) {
      source.kmsg_stream->MarkLive();
    }
    source.kmsg = std::make_unique<KmsgReader>();
    if (source.kmsg_stream) {
      source.kmsg->Start(&loop_, options_.kmsg_device, [this, state](const source::LineBatch& b) {
        OnBatch(*state, *state->kmsg_stream, b, 0);
      });
    }
    return;
  }
  TailSet::Hooks hooks;
  hooks.make_stream = [this, state](const std::string& path, source::FileId id,
                                    source::Fingerprint fingerprint) {
    return MakeStream(*state, path, id, fingerprint, true);
  };
  hooks.on_batch = [this, state](TailedFile& file, const source::LineBatch& batch,
                                 std::uint64_t offset) {
    if (file.caught_up) {
      file.stream->MarkLive();
    }
    OnBatch(*state, *file.stream, batch, offset);
    if (file.stream->writers().empty() && Clock::now() - last_writer_scan_ >= kWriterScanEvery) {
      StartWriterScan();  // a quiet daemon scans nothing; one reading unknown writers does
    }
  };
  hooks.on_pending = [this, state](TailedFile& file) {
    if (!file.tail.pending().empty()) {
      if (file.caught_up) {
        file.stream->MarkLive();
      }
      file.stream->OnPending(file.tail.pending(), file.tail.position().next_line, Clock::now());
      state->last_bytes = Clock::now();
    }
  };
  hooks.on_close = [this](TailedFile& file) {
    std::vector<detect::Firing> firings;
    file.stream->CloseTracebacks(std::chrono::system_clock::now(), firings);
    OnFirings(firings, nullptr);
  };
  std::vector<source::SavedTail> saved;
  for (auto it = saved_.begin(); it != saved_.end();) {
    if (it->source == source.config.name) {
      saved.push_back(*it);
      it = saved_.erase(it);
    } else {
      ++it;
    }
  }
  source.tails = std::make_unique<TailSet>(&loop_, source.config, setup_.config.watch,
                                           std::move(hooks), std::move(saved), first_start_);
  if (child_ && !child_->log_file().empty()) {
    source.tails->Exclude(child_->log_file());  // watched through the pipe already
  }
  source.tails->Start();
}

void Daemon::OnBatch(SourceState& source, Stream& stream, const source::LineBatch& batch,
                     std::uint64_t offset) {
  const Clock::time_point now = Clock::now();
  source.last_bytes = now;
  source.lines += batch.cut ? 0 : batch.size();
  source.bytes += batch.text.size();
  source.silence_reported.clear();
  std::vector<detect::Firing> firings;
  stream.OnBatch(batch, offset, now, std::chrono::system_clock::now(), firings);
  OnFirings(firings, &stream);
  if (stream.TracebackOpen() && !uv_is_active(traceback_timer_.base())) {
    uv_timer_start(
        traceback_timer_.get(),
        [](uv_timer_t* timer) {
          if (auto* self = static_cast<Daemon*>(timer->data)) {
            self->CloseQuietTracebacks();
          }
        },
        kTracebackQuiet.count(), 0);
  }
  SaveStateSoon();
}

void Daemon::CloseQuietTracebacks() {
  const Clock::time_point now = Clock::now();
  bool still_open = false;
  ForEachStream([&](SourceState&, Stream& stream, TailedFile*) {
    if (!stream.TracebackOpen()) {
      return;
    }
    if (now - stream.last_output() >= kTracebackQuiet) {
      std::vector<detect::Firing> firings;
      stream.CloseTracebacks(std::chrono::system_clock::now(), firings);
      OnFirings(firings, &stream);
    } else {
      still_open = true;
    }
  });
  if (still_open) {
    uv_timer_start(
        traceback_timer_.get(),
        [](uv_timer_t* timer) {
          if (auto* self = static_cast<Daemon*>(timer->data)) {
            self->CloseQuietTracebacks();
          }
        },
        kTracebackQuiet.count(), 0);
  }
}

void Daemon::OnFirings(std::vector<detect::Firing>& firings, Stream* stream) {
  const Clock::time_point now = Clock::now();
  for (detect::Firing& firing : firings) {
    const std::string rule = firing.event.rule_id;
    const std::string where =
        firing.stream + (firing.event.line ? ":" + std::to_string(firing.event.line) : "");
    const std::string what =
        firing.event.summary.empty() ? firing.event.text : firing.event.summary;
    if (stream != nullptr) {
      // Held before Add moves the firing; released when the incident is written (or at
      // once, below, when it joined nothing).
      stream->HoldForIncident(firing);
    }
    switch (incidents_.Add(std::move(firing), now)) {
      case detect::IncidentBuilder::Disposition::kOpened:
        spdlog::warn("{} fired at {}: {} (incident {} opened)", rule, where, what,
                     incidents_.open()->id);
        break;
      case detect::IncidentBuilder::Disposition::kJoined:
        spdlog::info("{} fired at {}: {} (joins incident {})", rule, where, what,
                     incidents_.open()->id);
        break;
      case detect::IncidentBuilder::Disposition::kCoolingDown:
        spdlog::info("{} fired at {}: {} (in cooldown, no new incident)", rule, where, what);
        break;
      case detect::IncidentBuilder::Disposition::kWarningAlone:
        spdlog::info("{} (warning) at {}: {}", rule, where, what);
        break;
    }
  }
  if (!incidents_.open() && stream != nullptr) {
    stream->ReleaseIncidentHold();
  }
  ScheduleSettle();
}

void Daemon::ScheduleSettle() {
  const std::optional<Clock::time_point> at = incidents_.SettlesAt();
  if (!at) {
    return;
  }
  const auto delay = std::max<Clock::duration>(Clock::duration::zero(), *at - Clock::now());
  uv_timer_start(
      settle_.get(),
      [](uv_timer_t* timer) {
        if (auto* self = static_cast<Daemon*>(timer->data)) {
          self->WriteSettled();
        }
      },
      static_cast<std::uint64_t>(std::chrono::ceil<std::chrono::milliseconds>(delay).count()), 0);
}

void Daemon::WriteSettled() {
  if (std::optional<detect::Incident> incident =
          incidents_.TakeSettled(Clock::now(), std::chrono::system_clock::now())) {
    WriteIncident(*incident);
  } else {
    ScheduleSettle();
  }
  if (stop_after_settle_ && !incidents_.open()) {
    Stop(exit_code_);
  }
}

void Daemon::WriteIncident(detect::Incident& incident) {
  if (Status written = incident_log_->Append(incident); !written) {
    // The incident still counts; the next one may find space again.
    spdlog::error("incident {} could not be recorded: {}", incident.id, written.error().message);
  } else {
    spdlog::warn("incident {}: {} — {} ({} firing lines, rules: {})", incident.id,
                 rules::RuleKindName(incident.kind), incident.summary,
                 incident.firings.size() + incident.more_firings,
                 fmt::format("{}", fmt::join(incident.rules, ", ")));
  }
  ++incidents_written_;
  last_incident_ = incident.id;
  ForEachStream([](SourceState&, Stream& stream, TailedFile*) { stream.ReleaseIncidentHold(); });
  SaveStateSoon();
  UpdateStatus();
}

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

void Daemon::CheckWriters(Clock::time_point now) {
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
  CheckWriters(now);
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
}

void Daemon::SaveStateSoon() {
  if (stopping_ || uv_is_active(save_timer_.base())) {
    return;
  }
  uv_timer_start(
      save_timer_.get(),
      [](uv_timer_t* timer) {
        if (auto* self = static_cast<Daemon*>(timer->data)) {
          self->SaveState();
        }
      },
      kStateSaveDelay.count(), 0);
}

void Daemon::SaveState() {
  if (guest_) {
    return;  // the offsets belong to the daemon that holds the state_dir
  }
  source::TailState state;
  for (auto& source : sources_) {
    if (source->tails) {
      source->tails->SaveTo(state.tails);
    }
  }
  // Entries of sources no longer configured are dropped here, as is right: their files are
  // no longer followed.
  if (Status saved = source::SaveTailState(setup_.config.state_dir + "/offsets.json", state);
      !saved) {
    spdlog::error("cannot save offsets: {}", saved.error().message);
  }
}

Status Daemon::Apply(Setup setup, bool initial) {
  std::vector<Diagnostic> notes;
  // Compiled rule databases are kept here: later starts load them instead of compiling.
  const std::string cache_dir =
      (initial ? setup.config.state_dir : setup_.config.state_dir) + "/cache";
  std::vector<std::unique_ptr<SourceState>> fresh;
  for (const config::SourceConfig& config : setup.config.sources) {
    Result<std::unique_ptr<SourceState>> source = MakeSource(config, setup.rules, cache_dir, notes);
    if (!source) {
      return source.error();
    }
    fresh.push_back(std::move(*source));
  }
  std::unique_ptr<SourceState> wrap_source;
  if (child_ || !options_.wrap.empty()) {
    config::SourceConfig wrap_config;
    wrap_config.name = "wrap";
    wrap_config.tags = {"train"};
    Result<std::unique_ptr<SourceState>> source =
        MakeSource(wrap_config, setup.rules, cache_dir, notes);
    if (!source) {
      return source.error();
    }
    wrap_source = std::move(*source);
  }
  for (const Diagnostic& note : notes) {
    spdlog::info("{}", FormatDiagnostic(note));
  }
  if (!initial && setup.config.state_dir != setup_.config.state_dir) {
    spdlog::warn("state_dir changed from {} to {}: takes effect at the next start",
                 setup_.config.state_dir, setup.config.state_dir);
    setup.config.state_dir = setup_.config.state_dir;
  }
  // Everything compiled: from here on the new setup replaces the old without failing.
  // Sources that keep their name keep their files, offsets and detector state.
  std::map<std::string, std::unique_ptr<SourceState>> old;
  for (auto& source : sources_) {
    old.emplace(source->config.name, std::move(source));
  }
  sources_.clear();
  setup_ = std::move(setup);
  incidents_.set_settings({setup_.config.incident.settle, setup_.config.incident.cooldown});
  for (auto& source : fresh) {
    auto kept = old.find(source->config.name);
    if (kept != old.end() && kept->second->config.kmsg == source->config.kmsg) {
      SourceState& previous = *kept->second;
      previous.line_rules = source->line_rules;
      previous.progress_rules = source->progress_rules;
      previous.silence_rules = source->silence_rules;
      previous.exit_rules = source->exit_rules;
      const bool paths_changed = previous.config.paths != source->config.paths;
      previous.config = source->config;
      SwapRules(previous);
      if (previous.tails && paths_changed) {
        previous.tails->Reconfigure(previous.config, setup_.config.watch);
      }
      sources_.push_back(std::move(kept->second));
      old.erase(kept);
      continue;
    }
    sources_.push_back(std::move(source));
    StartSource(*sources_.back());
  }
  for (auto& [name, source] : old) {
    spdlog::info("source {} removed", name);
    if (source->tails) {
      source->tails->Close();
    }
  }
  if (wrap_source) {
    if (wrap_source_) {
      wrap_source_->line_rules = wrap_source->line_rules;
      wrap_source_->progress_rules = wrap_source->progress_rules;
      wrap_source_->silence_rules = wrap_source->silence_rules;
      wrap_source_->exit_rules = wrap_source->exit_rules;
      SwapRules(*wrap_source_);
    } else {
      wrap_source_ = std::move(wrap_source);
    }
  }
  return Status::Ok();
}

void Daemon::SwapRules(SourceState& source) {
  auto swap = [&](Stream& stream) {
    if (Status swapped = stream.SetRules(source.line_rules); !swapped) {
      spdlog::error("source {}: {}: {}", source.config.name, stream.identity().name,
                    swapped.error().message);
    }
  };
  if (source.tails) {
    for (auto& [id, file] : source.tails->files()) {
      swap(*file->stream);
    }
  }
  if (source.kmsg_stream) {
    swap(*source.kmsg_stream);
  }
  for (auto& stream : source.wrap_streams) {
    swap(*stream);
  }
}

void Daemon::Reload() {
  spdlog::info("SIGHUP: reloading {}", setup_.config.file);
  Result<Setup> setup = LoadSetup(setup_.config.file);
  if (!setup) {
    spdlog::error("reload rejected, still running on the previous config and rules:\n{}",
                  setup.error().message);
    return;
  }
  const std::size_t rules = setup->rules.size();
  if (guest_) {
    setup->config.sources.clear();
  }
  if (Status applied = Apply(std::move(*setup), /*initial=*/false); !applied) {
    spdlog::error("reload rejected, still running on the previous config and rules: {}",
                  applied.error().message);
    return;
  }
  spdlog::info("reloaded: {} sources, {} rules", sources_.size(), rules);
  malloc_trim(0);
  UpdateStatus();
}

void Daemon::Stop(int exit_code) {
  if (stopping_) {
    return;
  }
  stopping_ = true;
  exit_code_ = exit_code;
  SaveState();
  sd_notify(0, "STOPPING=1");
  for (auto& source : sources_) {
    if (source->tails) {
      source->tails->Close();
    }
    if (source->kmsg) {
      source->kmsg->Stop();
    }
  }
  sources_.clear();
  wrap_source_.reset();
  control_.Stop();
  tick_.Reset();
  settle_.Reset();
  traceback_timer_.Reset();
  save_timer_.Reset();
  watchdog_.Reset();
  writer_soon_.Reset();
  signals_.clear();
  child_.reset();
}

void Daemon::OnChildEnd(const ChildEnd& end) {
  child_end_ = end;
  const std::string how = end.signal != 0 ? "was killed by signal " + std::to_string(end.signal) +
                                                " (" + strsignal(end.signal) + ")"
                                          : "exited with code " + std::to_string(end.exit_code);
  spdlog::info("wrap: the command {}", how);
  if (wrap_source_) {
    std::vector<detect::Firing> firings;
    for (auto& stream : wrap_source_->wrap_streams) {
      stream->progress().EndJob();
      stream->CloseTracebacks(std::chrono::system_clock::now(), firings);
      OnFirings(firings, stream.get());
      firings.clear();
    }
    for (const rules::Rule& rule : wrap_source_->exit_rules) {
      const auto& exit = std::get<rules::ExitDetector>(rule.detector);
      const bool fires =
          end.signal != 0 ? exit.any_nonzero || std::find(exit.signals.begin(), exit.signals.end(),
                                                          end.signal) != exit.signals.end()
                          : (exit.any_nonzero && end.exit_code != 0) ||
                                std::find(exit.codes.begin(), exit.codes.end(), end.exit_code) !=
                                    exit.codes.end();
      if (!fires) {
        continue;
      }
      detect::Event event;
      event.rule_id = rule.id;
      event.kind = rule.kind;
      event.text = "process " + std::to_string(child_ ? child_->pid() : 0) + " (" +
                   options_.wrap.front() + ") " + how;
      event.summary = event.text;
      Stream& stream = *wrap_source_->wrap_streams.back();
      firings.push_back(stream.MakeFiring(std::move(event), std::chrono::system_clock::now()));
    }
    OnFirings(firings, nullptr);
  }
  exit_code_ = end.ShellStatus();
  // The incident the end belongs to is written before we go.
  if (incidents_.open()) {
    stop_after_settle_ = true;
  } else {
    Stop(exit_code_);
  }
}

void Daemon::UpdateStatus() {
  std::size_t files = 0;
  for (auto& source : sources_) {
    files += source->tails ? source->tails->files().size() : 0;
  }
  std::string status = "watching " + std::to_string(files) + " files in " +
                       std::to_string(sources_.size()) + " sources; " +
                       std::to_string(incidents_written_) + " incidents";
  if (!last_incident_.empty()) {
    status += " (last " + last_incident_ + ")";
  }
  if (status != last_status_) {
    sd_notify(0, ("STATUS=" + status).c_str());
    last_status_ = status;
  }
}

json Daemon::StatusJson() const {
  const Clock::time_point now = Clock::now();
  json sources = json::array();
  auto stream_json = [&](const Stream& stream) {
    json bars = json::array();
    for (const auto& [key, bar] : stream.progress().bars()) {
      json entry = {
          {"label", bar.label},
          {"count", bar.count},
          {"complete", bar.complete},
          {"advanced", bar.advanced},
          {"seconds_since_advance",
           std::chrono::duration_cast<std::chrono::seconds>(now - bar.last_advance).count()}};
      if (bar.total) {
        entry["total"] = *bar.total;
      }
      bars.push_back(std::move(entry));
    }
    return json{
        {"name", stream.identity().name},
        {"lines", stream.lines()},
        {"bytes", stream.bytes()},
        {"job_ended", stream.progress().ended()},
        {"seconds_since_output",
         std::chrono::duration_cast<std::chrono::seconds>(now - stream.last_output()).count()},
        {"bars", std::move(bars)}};
  };
  auto source_json = [&](const SourceState& source) {
    json files = json::array();
    json streams = json::array();
    if (source.tails) {
      for (const auto& [id, file] : source.tails->files()) {
        json entry = stream_json(*file->stream);
        entry["path"] = file->tail.path();
        entry["offset"] = file->tail.position().offset;
        entry["durable_offset"] = file->stream->Durable(file->tail.position()).offset;
        json writers = json::array();
        for (const source::WriterProcess& writer : file->stream->writers()) {
          writers.push_back({{"pid", writer.pid}, {"comm", writer.comm}});
        }
        entry["writers"] = std::move(writers);
        if (file->gone_since) {
          entry["gone"] = true;
        }
        files.push_back(std::move(entry));
      }
    }
    if (source.kmsg_stream) {
      streams.push_back(stream_json(*source.kmsg_stream));
    }
    for (const auto& stream : source.wrap_streams) {
      streams.push_back(stream_json(*stream));
    }
    json entry = {{"name", source.config.name},   {"tags", source.config.tags},
                  {"paths", source.config.paths}, {"lines", source.lines},
                  {"bytes", source.bytes},        {"files", std::move(files)},
                  {"streams", std::move(streams)}};
    if (source.config.kmsg) {
      entry["kmsg"] = source.kmsg && source.kmsg->running();
    }
    if (source.tails && !source.tails->parked_copies().empty()) {
      entry["parked_copies"] = source.tails->parked_copies();
    }
    return entry;
  };
  for (const auto& source : sources_) {
    sources.push_back(source_json(*source));
  }
  if (wrap_source_) {
    sources.push_back(source_json(*wrap_source_));
  }
  json status = {
      {"version", TRAINWATCH_VERSION},
      {"pid", ::getpid()},
      {"config", setup_.config.file},
      {"state_dir", setup_.config.state_dir},
      {"uptime_seconds", std::chrono::duration_cast<std::chrono::seconds>(now - started_).count()},
      {"rules", setup_.rules.size()},
      {"incidents_written", incidents_written_},
      {"incidents_file", incident_log_->path()},
      {"sources", std::move(sources)}};
  if (!last_incident_.empty()) {
    status["last_incident"] = last_incident_;
  }
  if (const auto& open = incidents_.open()) {
    status["open_incident"] = {{"id", open->id},
                               {"kind", rules::RuleKindName(open->kind)},
                               {"summary", open->summary},
                               {"rules", open->rules}};
  }
  return status;
}

std::string Daemon::HandleControl(const std::string& request_text) {
  const json request = json::parse(request_text, nullptr, /*allow_exceptions=*/false);
  if (!request.is_object() || !request.contains("command")) {
    return json{{"error", "bad request: expected {\"command\": ...}"}}.dump();
  }
  const std::string command = request.value("command", "");
  if (command == "status") {
    return StatusJson().dump(-1, ' ', false, json::error_handler_t::replace);
  }
  if (command == "snapshot") {
    detect::Incident incident = incidents_.Manual(request.value("reason", "manual snapshot"),
                                                  std::chrono::system_clock::now());
    WriteIncident(incident);
    return json{{"incident", incident.id}, {"incidents_file", incident_log_->path()}}.dump();
  }
  return json{{"error", "unknown command: " + command}}.dump();
}

void Daemon::StartWrap() {
  SourceState* wrap = wrap_source_.get();
  for (const char* name : {"wrap:stdout", "wrap:stderr"}) {
    wrap->wrap_streams.push_back(MakeStream(*wrap, name, {}, {}, false));
    if (!wrap->wrap_streams.back()) {
      Stop(2);  // logged by MakeStream
      return;
    }
    wrap->wrap_streams.back()->MarkLive();
  }
  std::string log_file = setup_.config.wrap_log_file;
  if (const std::size_t at = log_file.find("{pid}"); at != std::string::npos) {
    log_file.replace(at, 5, std::to_string(::getpid()));
  }
  WrappedChild::Hooks hooks;
  hooks.on_batch = [this, wrap](int index, const source::LineBatch& batch) {
    OnBatch(*wrap, *wrap->wrap_streams[static_cast<std::size_t>(index)], batch, 0);
  };
  hooks.on_pending = [wrap](int index, std::string_view pending) {
    Stream& stream = *wrap->wrap_streams[static_cast<std::size_t>(index)];
    stream.OnPending(pending, stream.last_line() + 1, Clock::now());
    wrap->last_bytes = Clock::now();
  };
  hooks.on_end = [this](const ChildEnd& end) { OnChildEnd(end); };
  if (Status started = child_->Start(&loop_, options_.wrap, log_file, std::move(hooks)); !started) {
    spdlog::error("{}", started.error().message);
    child_.reset();
    Stop(127);
  } else {
    for (auto& source : sources_) {
      if (source->tails && !log_file.empty()) {
        source->tails->Exclude(log_file);
      }
    }
    const source::WriterProcess command{
        child_->pid(), std::filesystem::path(options_.wrap.front()).filename().string()};
    for (auto& stream : wrap->wrap_streams) {
      stream->set_writers({command});
    }
  }
}

int Daemon::Run() {
  const std::string config_path =
      options_.config_path.empty() ? DefaultConfigPath() : options_.config_path;
  Result<Setup> setup = LoadSetup(config_path);
  if (!setup) {
    spdlog::error("cannot start:\n{}", setup.error().message);
    return 2;
  }
  const std::string state_dir = setup->config.state_dir;
  std::error_code made;
  std::filesystem::create_directories(state_dir, made);
  if (made) {
    spdlog::error("cannot start: state_dir {}: {}", state_dir, made.message());
    return 2;
  }
  // One daemon per state_dir: two would fight over offsets and the control socket.
  state_lock_ = UniqueFd(::open((state_dir + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (state_lock_.get() < 0 || ::flock(state_lock_.get(), LOCK_EX | LOCK_NB) != 0) {
    if (options_.wrap.empty()) {
      spdlog::error("cannot start: another trainwatch daemon uses state_dir {} ({})", state_dir,
                    std::strerror(errno));
      return 2;
    }
    // The job must run anyway. That daemon watches the configured sources; this wrap watches
    // only its command, and appends its incidents to the same log (whole-line appends).
    spdlog::info("a trainwatch daemon already watches state_dir {}: watching only the command",
                 state_dir);
    guest_ = true;
    setup->config.sources.clear();
  }
  Result<source::LoadedTailState> state = source::LoadTailState(state_dir + "/offsets.json");
  if (!state) {
    spdlog::error("{}; starting without saved offsets", state.error().message);
  } else {
    saved_ = std::move(state->state.tails);
    first_start_ = state->first_start;
  }
  incident_log_ = std::make_unique<IncidentLog>(state_dir + "/incidents.jsonl");
  if (Result<IncidentHistory> history = incident_log_->ReadHistory(); history) {
    history_ = std::move(*history);
  } else {
    spdlog::error("{}; earlier incidents are not taken into account", history.error().message);
  }
  const auto wall_now = std::chrono::system_clock::now();
  for (const auto& [rule, opened] : history_.rule_last_opened) {
    incidents_.RestoreCooldown(rule, Clock::now() - (wall_now - opened));
  }
  incidents_written_ = 0;

  uv_loop_init(&loop_);
  int status = 0;
  for (auto* timer :
       {&tick_, &settle_, &traceback_timer_, &save_timer_, &watchdog_, &writer_soon_}) {
    *timer = UvHandle<uv_timer_t>::Make(&loop_, status, uv_timer_init);
    (*timer)->data = this;
  }
  for (int signum : {SIGHUP, SIGTERM, SIGINT}) {
    auto handle = UvHandle<uv_signal_t>::Make(&loop_, status, uv_signal_init);
    handle->data = this;
    uv_signal_start(
        handle.get(),
        [](uv_signal_t* signal, int signum) {
          auto* self = static_cast<Daemon*>(signal->data);
          if (self == nullptr) {
            return;
          }
          if (signum == SIGHUP) {
            self->Reload();
          } else if (self->child_ && self->child_->running()) {
            // At a terminal, Ctrl-C reaches the command directly (same process group): passing
            // it on would interrupt its own handling of the first.
            if (signum != SIGINT || !::isatty(STDIN_FILENO)) {
              spdlog::info("{}: passing it to the command", strsignal(signum));
              self->child_->Signal(signum);
            }
          } else {
            spdlog::info("{}: stopping", strsignal(signum));
            self->Stop(0);
          }
        },
        signum);
    signals_.push_back(std::move(handle));
  }
  ::signal(SIGPIPE, SIG_IGN);  // a client that hangs up on the control socket is no reason to die

  if (!options_.wrap.empty()) {
    child_ = std::make_unique<WrappedChild>();
  }
  if (Status applied = Apply(std::move(*setup), /*initial=*/true); !applied) {
    spdlog::error("cannot start: {}", applied.error().message);
    Stop(2);
  } else if (guest_) {
    // No control socket: the daemon of this state_dir answers there.
  } else if (Status listening = control_.Start(
                 &loop_, state_dir + "/control.sock",
                 [this](const std::string& request) { return HandleControl(request); });
             !listening) {
    spdlog::error("cannot start the control socket: {}", listening.error().message);
    Stop(2);
  }
  if (!stopping_ && child_) {
    StartWrap();
  }
  if (!stopping_) {
    uv_timer_start(
        tick_.get(),
        [](uv_timer_t* timer) {
          if (auto* self = static_cast<Daemon*>(timer->data)) {
            self->Tick();
          }
        },
        std::chrono::milliseconds(kTick).count(), std::chrono::milliseconds(kTick).count());
    std::uint64_t watchdog_usec = 0;
    if (sd_watchdog_enabled(0, &watchdog_usec) > 0 && watchdog_usec > 0) {
      // Pinged from the loop itself: a loop that is stuck stops pinging, and systemd restarts
      // a daemon that would otherwise miss every failure from then on.
      const std::uint64_t every = std::max<std::uint64_t>(1, watchdog_usec / 2000);
      uv_timer_start(
          watchdog_.get(), [](uv_timer_t*) { sd_notify(0, "WATCHDOG=1"); }, every, every);
    }
    StartWriterScan();
    UpdateStatus();
    // Compiling the rules (Hyperscan, RE2) used and freed megabytes that malloc keeps: give
    // them back, a watcher's footprint is what stays.
    malloc_trim(0);
    sd_notify(0, "READY=1");
    spdlog::info("watching: {} sources, {} rules; incidents go to {}", sources_.size(),
                 setup_.rules.size(), incident_log_->path());
  }
  uv_run(&loop_, UV_RUN_DEFAULT);
  const int closed = uv_loop_close(&loop_);
  if (closed != 0) {
    spdlog::error("loop did not close cleanly: {}", uv_strerror(closed));
    return exit_code_ == 0 ? 1 : exit_code_;
  }
  return exit_code_;
}

}  // namespace

std::string DefaultConfigPath() {
  if (const char* path = std::getenv("TRAINWATCH_CONFIG"); path != nullptr && *path != '\0') {
    return path;
  }
  if (std::filesystem::exists("/etc/trainwatch/trainwatch.yaml")) {
    return "/etc/trainwatch/trainwatch.yaml";
  }
  return ShippedConfigPath();
}

int RunDaemon(const DaemonOptions& options) {
  Daemon daemon(options);
  return daemon.Run();
}

int CheckConfig(const std::string& config_path) {
  Result<Setup> setup = LoadSetup(config_path);
  if (!setup) {
    std::fputs(setup.error().message.c_str(), stderr);
    return 2;
  }
  std::vector<Diagnostic> notes;
  for (const config::SourceConfig& source : setup->config.sources) {
    Result<std::shared_ptr<const rules::CompiledRules>> compiled =
        rules::CompiledRules::Build(setup->rules, source.tags, &notes);
    if (!compiled) {
      std::fprintf(stderr, "%s: source %s: %s\n", config_path.c_str(), source.name.c_str(),
                   compiled.error().message.c_str());
      return 2;
    }
  }
  std::printf("%s: ok: %zu sources, %zu rules, state in %s\n", config_path.c_str(),
              setup->config.sources.size(), setup->rules.size(), setup->config.state_dir.c_str());
  return 0;
}

}  // namespace trainwatch::app
