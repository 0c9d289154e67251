#include "watch/sources.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "collect/rank_identity.h"

namespace trainwatch::watch {
namespace {

// A traceback is over when its writer has been quiet this long: Python prints one at once.
constexpr auto kTracebackQuiet = std::chrono::milliseconds(300);
// A traceback with frames but no exception line yet is still being printed: Python reads each
// frame's source file as it prints it, and on a loaded machine a pause between frames, or
// before the exception line, passes 300 ms. Closing it then names no exception.
constexpr auto kUnfinishedTracebackQuiet = std::chrono::milliseconds(3000);
// How often the writers' launchers are walked for their ranks (the roster): a rank killed
// sooner after its start than this may be missed. A walk reads every /proc/PID/stat.
constexpr auto kRosterLookEvery = std::chrono::seconds(3);
// New files are scanned for at once; a file that grows while no writer is known is scanned
// for at most this often (its writer may be in another PID namespace, invisible to us).
constexpr auto kWriterScanEvery = std::chrono::seconds(30);
// While an incident is unresolved, unknown writers are looked for this often.
constexpr auto kUrgentScanEvery = std::chrono::seconds(2);
// A Slurm step daemon found untitled is looked at again after this (it titles itself at once).
constexpr auto kRetitleScanAfter = std::chrono::milliseconds(300);
constexpr int kRetitleLooks = 3;
constexpr std::size_t kMaxUntitledStepds = 256;
// Scans asked for by writers closing their files (IN_CLOSE_WRITE) come at most this often.
constexpr auto kCloseScanEvery = std::chrono::seconds(1);

}  // namespace

Result<PreparedSources> PrepareSources(const config::DaemonConfig& config,
                                       const std::vector<rules::Rule>& rules, bool wrapping,
                                       const std::string& cache_dir,
                                       std::vector<Diagnostic>& notes) {
  auto make = [&](const config::SourceConfig& source) -> Result<std::unique_ptr<WatchedSource>> {
    Result<rules::SourceRules> built =
        rules::BuildSourceRules(rules, source.tags, source.name, cache_dir, notes);
    if (!built) {
      return built.error();
    }
    return std::make_unique<WatchedSource>(source, std::move(*built));
  };
  PreparedSources prepared;
  for (const config::SourceConfig& source : config.sources) {
    Result<std::unique_ptr<WatchedSource>> made = make(source);
    if (!made) {
      return made.error();
    }
    prepared.sources.push_back(std::move(*made));
  }
  if (wrapping) {
    config::SourceConfig wrap;
    wrap.name = "wrap";
    wrap.tags = {"train"};
    Result<std::unique_ptr<WatchedSource>> made = make(wrap);
    if (!made) {
      return made.error();
    }
    prepared.wrap = std::move(*made);
  }
  return prepared;
}

Sources::Sources(Env& env, uv_loop_t* kmsg_loop, std::string kmsg_device, OnFirings on_firings,
                 std::function<void()> save_soon, ops::IncidentHistory fired,
                 std::vector<source::SavedTail> saved, bool first_start)
    : env_(env),
      kmsg_loop_(kmsg_loop),
      kmsg_device_(std::move(kmsg_device)),
      on_firings_(std::move(on_firings)),
      save_soon_(std::move(save_soon)),
      fired_(std::move(fired)),
      saved_(std::move(saved)),
      first_start_(first_start),
      writer_scan_(
          env,
          [this] {
            std::set<source::FileId> files;
            for (auto& source : sources_) {
              if (source->tails() != nullptr) {
                for (auto& [id, file] : source->tails()->files()) {
                  files.insert(id);
                }
              }
            }
            last_writer_scan_ = env_.SteadyNow();
            return files;
          },
          [this](const source::WriterScan::Found& found) { OnWritersFound(found); }),
      roster_(env),
      blocked_(env,
               [this](const std::vector<BlockedWatch::Report>& reports) { OnBlocked(reports); }),
      writer_soon_(env.NewTimer([this] { writer_scan_.Request(); })),
      traceback_timer_(env.NewTimer([this] { CloseQuietTracebacks(); })) {
  if (kmsg_loop_ != nullptr) {
    std::string why;
    if (exits_.Start(
            kmsg_loop_,
            [this](const source::ProcessExit& exit) { roster_.OnExit(exit.pid, exit.status); },
            why)) {
      spdlog::info("process exits: following the kernel's process events");
    } else {
      // Not an error: only root on the host (CAP_NET_ADMIN there) may hear them.
      spdlog::info("process exits: {}; how a rank ended will be unknown (seen only as gone)", why);
    }
  }
}

Sources::~Sources() { Close(); }

void Sources::Apply(PreparedSources prepared, const config::DaemonConfig& config) {
  watch_ = config.watch;
  context_lines_ = config.incident.context_lines;
  std::map<std::string, std::unique_ptr<WatchedSource>> old;
  for (auto& source : sources_) {
    old.emplace(source->config().name, std::move(source));
  }
  sources_.clear();
  for (auto& source : prepared.sources) {
    auto kept = old.find(source->config().name);
    if (kept != old.end() && kept->second->config().kmsg == source->config().kmsg &&
        kept->second->config().processes == source->config().processes) {
      kept->second->Reconfigure(source->config(), source->TakeRules(), watch_, context_lines_);
      sources_.push_back(std::move(kept->second));
      old.erase(kept);
      continue;
    }
    sources_.push_back(std::move(source));
    Start(*sources_.back());
  }
  for (auto& [name, source] : old) {
    spdlog::info("source {} removed", name);
    source->Close();
  }
  if (prepared.wrap) {
    if (wrap_) {
      wrap_->Reconfigure(wrap_->config(), prepared.wrap->TakeRules(), watch_, context_lines_);
    } else {
      wrap_ = std::move(prepared.wrap);
    }
  }
}

WatchedSource::Outlet Sources::OutletFor() {
  WatchedSource::Outlet outlet;
  outlet.fired = on_firings_;
  outlet.new_file = [this] {
    if (writer_soon_ && !writer_soon_->active()) {
      // Who writes a new file is best learned while the writer is young: a job killed a
      // second after it started must still be known to have died.
      writer_soon_->Start(std::chrono::milliseconds(200), {});
    }
  };
  outlet.unknown_writers = [this] {
    const auto since = env_.SteadyNow() - last_writer_scan_;
    if (since >= kWriterScanEvery) {
      writer_scan_.Request();  // a quiet daemon scans nothing; one reading unknown writers does
    } else if (writers_urgent_ && writers_urgent_() && writer_soon_ && !writer_soon_->active()) {
      // An incident waits for its job to restart: a new writer is that restart, and must be
      // known before the restarted job's own failure is judged (a job that fails again within
      // seconds is a new incident only once the first resolved).
      writer_soon_->Start(std::chrono::ceil<std::chrono::milliseconds>(
                              std::max<SteadyTime::duration>(kUrgentScanEvery - since, {})),
                          {});
    }
  };
  outlet.writer_closed = [this] {
    // Whether anyone still holds the file: a job killed before any scan saw it is known to be
    // gone only this way. At once, but at most about once a second: a logger that opens and
    // closes its file for every line must not keep a /proc walk running.
    const auto since = env_.SteadyNow() - last_writer_scan_;
    if (since >= kCloseScanEvery) {
      writer_scan_.Request();
    } else if (writer_soon_ && !writer_soon_->active()) {
      writer_soon_->Start(std::chrono::ceil<std::chrono::milliseconds>(kCloseScanEvery - since),
                          {});
    }
  };
  outlet.oom_killed = [this](int pid, std::string_view line) {
    constexpr std::size_t kKept = 64;
    if (oom_killed_.count(pid) == 0) {
      oom_order_.push_back(pid);
    }
    oom_killed_[pid] = std::string(line);
    if (oom_order_.size() > kKept) {
      oom_killed_.erase(oom_order_.front());
      oom_order_.erase(oom_order_.begin());
    }
  };
  outlet.oom_evidence = [this](int pid) {
    auto found = oom_killed_.find(pid);
    return found == oom_killed_.end() ? std::string() : found->second;
  };
  outlet.wait_status = [this](int pid) { return roster_.WaitStatusOf(pid); };
  outlet.crash_caught = [this](detect::StreamDetector& stream) {
    if (on_crash_caught_) {
      on_crash_caught_(stream);
    }
  };
  outlet.traceback_open = [this] {
    if (traceback_timer_ && !traceback_timer_->active()) {
      traceback_timer_->Start(kTracebackQuiet, {});
    }
  };
  outlet.read = save_soon_;
  outlet.suppress_fired = [this](detect::StreamDetector& stream, const source::FileTail& file) {
    // Lines of this file that already fired before a restart must not fire again; nor, in a
    // copytruncate copy, the lines its original fired (the copy holds the same first bytes
    // and continues the original's line numbers).
    for (const std::optional<source::FileId>& id : {std::optional(file.id()), file.copy_of()}) {
      if (!id) {
        continue;
      }
      auto [begin, end] = fired_.fired.equal_range(id->ToString());
      for (auto it = begin; it != end; ++it) {
        const std::optional<source::Fingerprint> now = file.HeadFingerprint(it->second.head_bytes);
        if (now && now->hash == it->second.head_hash) {
          stream.SuppressThrough(it->second.line);
        }
      }
    }
  };
  return outlet;
}

void Sources::Start(WatchedSource& source) {
  WatchedSource::Producer producer;
  producer.kmsg_loop = kmsg_loop_;
  producer.kmsg_device = kmsg_device_;
  producer.watch = watch_;
  for (auto it = saved_.begin(); it != saved_.end();) {
    if (it->source == source.config().name) {
      producer.saved.push_back(*it);
      it = saved_.erase(it);
    } else {
      ++it;
    }
  }
  producer.first_start = first_start_;
  producer.excluded = excluded_;
  producer.descriptors = descriptors_;
  source.Start(env_, OutletFor(), context_lines_, std::move(producer));
}

void Sources::CloseQuietTracebacks() {
  const SteadyTime now = env_.SteadyNow();
  bool still_open = false;
  ForEachSource([&](WatchedSource& source) {
    still_open =
        source.CloseQuietTracebacks(now, kTracebackQuiet, kUnfinishedTracebackQuiet) || still_open;
  });
  if (still_open) {
    traceback_timer_->Start(kTracebackQuiet, {});
  }
}

void Sources::Tick(SteadyTime now) {
  for (auto& source : sources_) {
    if (source->tails() != nullptr) {
      source->tails()->Sweep(now);  // what inotify missed, read before writers are judged
    }
    source->CheckWriters(now);
  }
  ForEachSource([&](WatchedSource& source) { source.CheckTime(now); });
  if (now - last_roster_look_ >= kRosterLookEvery) {
    LookForRanks();
  }
  LookForBlocked(now);
}

void Sources::LookForBlocked(SteadyTime now) {
  std::optional<std::chrono::milliseconds> after;
  for (const auto& source : sources_) {
    if (source->config().processes) {
      after =
          std::min(after.value_or(source->config().blocked_after), source->config().blocked_after);
    }
  }
  if (!after) {
    blocked_.ClearStall();  // no process watch now (a reload removed it): nothing is blind
    return;
  }
  if (!blocked_.Due(now)) {
    return;
  }
  std::vector<WatchedProcess> processes;
  for (const auto& [pid, alive] : JobProcessesByPid()) {
    processes.push_back({pid, alive.start_ticks, alive.process.comm,
                         collect::RankInEnviron(alive.process.environ)});
  }
  blocked_.set_after(*after);
  blocked_.Tick(now, std::move(processes));
}

std::map<pid_t, ProcessRoster::Alive> Sources::JobProcessesByPid() {
  std::map<pid_t, ProcessRoster::Alive> processes;
  for (ProcessRoster::Alive& alive : roster_.AliveProcesses()) {
    processes.emplace(alive.process.pid, std::move(alive));
  }
  // A job of one process has no launcher to walk: its writer is the rank (start time unknown).
  for (source::WriterProcess& writer : KnownWriters()) {
    processes.emplace(writer.pid, ProcessRoster::Alive{std::move(writer), 0});
  }
  return processes;
}

void Sources::OnBlocked(const std::vector<BlockedWatch::Report>& reports) {
  const std::map<pid_t, ProcessRoster::Alive> known = JobProcessesByPid();
  for (const BlockedWatch::Report& report : reports) {
    auto found = known.find(report.pid);
    TellProcessesSources(found == known.end() ? nullptr : &found->second.process, report.line);
  }
}

void Sources::TellProcessesSources(const source::WriterProcess* writer, const std::string& line) {
  for (auto& source : sources_) {
    if (source->config().processes) {
      source->OnProcessLine(writer, line);
    }
  }
}

void Sources::LookForRanks() {
  last_roster_look_ = env_.SteadyNow();
  std::vector<pid_t> seeds;
  for (const source::WriterProcess& writer : KnownWriters()) {
    seeds.push_back(writer.pid);
  }
  if (!seeds.empty() || roster_.size() > 0) {
    roster_.Look(std::move(seeds));
  }
}

void Sources::OnWritersFound(const source::WriterScan::Found& found) {
  const SteadyTime now = env_.SteadyNow();
  for (auto& source : sources_) {
    std::set<source::FileId> unheld;
    for (auto& [id, stream] : source->file_streams()) {
      auto writers = found.find(id);
      if (writers != found.end() && !writers->second.empty()) {
        std::vector<source::WriterProcess> now_writing = writers->second;
        source::KeepWhatExitingWritersHadShown(now_writing, stream->writers());
        stream->set_writers(std::move(now_writing));  // exits: CheckWriters, one by one
      } else {
        unheld.insert(id);
      }
    }
    source->WritersNotFound(unheld, now);
  }
  LookForRanks();  // a new writer may be a launcher whose ranks have just started
  // A batch job's output file is held by its slurmstepd, whose title names the job, but only
  // once it has set it: one found before is looked at again, a few times.
  for (const auto& [id, writers] : found) {
    for (const source::WriterProcess& writer : writers) {
      if (writer.uid == 0 && writer.comm == "slurmstepd" &&
          !writer.cmdline.starts_with("slurmstepd: [") &&
          ++untitled_stepds_[writer.pid] <= kRetitleLooks && writer_soon_ &&
          !writer_soon_->active()) {
        writer_soon_->Start(kRetitleScanAfter, {});
      }
    }
  }
  if (untitled_stepds_.size() > kMaxUntitledStepds) {
    untitled_stepds_.clear();
  }
}

void Sources::Close() {
  writer_scan_.Stop();
  exits_.Stop();
  for (auto& source : sources_) {
    source->Close();
  }
  sources_.clear();
  wrap_.reset();
  writer_soon_.reset();
  traceback_timer_.reset();
}

void Sources::SaveTo(source::TailState& state) const {
  for (const auto& source : sources_) {
    if (source->tails() != nullptr) {
      source->tails()->SaveTo(state.tails);
    }
  }
}

void Sources::ReleaseIncidentHolds() {
  ForEachSource([](WatchedSource& source) {
    source.ForEachStream(
        [](detect::StreamDetector& stream, source::TailedFile*) { stream.ReleaseIncidentHold(); });
  });
}

bool Sources::AnyTracebackOpen() {
  bool open = false;
  ForEachSource([&](WatchedSource& source) {
    source.ForEachStream([&](detect::StreamDetector& stream, source::TailedFile*) {
      open = open || stream.TracebackOpen();
    });
  });
  return open;
}

bool Sources::StartWrap(int pid, const std::string& comm) {
  return wrap_->StartWrap(env_, OutletFor(), context_lines_, pid, comm);
}

void Sources::OnWrapBatch(int index, const source::LineBatch& batch) {
  wrap_->OnWrapBatch(static_cast<std::size_t>(index), batch);
}

void Sources::OnWrapPending(int index, std::string_view pending) {
  wrap_->OnWrapPending(static_cast<std::size_t>(index), pending);
}

void Sources::OnWrapEnded(const source::ChildEnd& end, const std::string& who) {
  if (wrap_) {
    wrap_->OnWrapEnded(end, who);
  }
}

void Sources::Exclude(const std::string& path) {
  excluded_.push_back(path);
  for (auto& source : sources_) {
    source->Exclude(path);
  }
}

}  // namespace trainwatch::watch
