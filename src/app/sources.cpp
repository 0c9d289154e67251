#include "app/sources.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <set>

#include "core/unique_fd.h"
#include "source/glob.h"

namespace trainwatch::app {
namespace {

using Clock = std::chrono::steady_clock;

// A traceback is over when its writer has been quiet this long: Python prints one at once.
constexpr auto kTracebackQuiet = std::chrono::milliseconds(300);
// New files are scanned for at once; a file that grows while no writer is known is scanned
// for at most this often (its writer may be in another PID namespace, invisible to us).
constexpr auto kWriterScanEvery = std::chrono::seconds(30);

bool Alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

std::int64_t SecondsBetween(SteadyTime then, SteadyTime now) {
  return std::chrono::duration_cast<std::chrono::seconds>(now - then).count();
}

ops::StreamSnapshot SnapshotOf(const detect::StreamDetector& stream, SteadyTime now,
                               std::chrono::system_clock::time_point wall_now) {
  ops::StreamSnapshot snapshot;
  snapshot.name = stream.identity().name;
  snapshot.lines = stream.lines();
  snapshot.bytes = stream.bytes();
  snapshot.job_ended = stream.progress().ended();
  snapshot.seconds_since_output = SecondsBetween(stream.last_output(), now);
  for (const auto& [key, bar] : stream.progress().bars()) {
    ops::BarSnapshot entry;
    entry.key = key;
    entry.label = bar.label;
    entry.count = bar.count;
    entry.total = bar.total;
    entry.complete = bar.complete;
    entry.advanced = bar.advanced;
    entry.seconds_since_advance = SecondsBetween(bar.last_advance, now);
    entry.last_advance = wall_now - std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                        now - bar.last_advance);
    snapshot.bars.push_back(std::move(entry));
  }
  return snapshot;
}

}  // namespace

Result<PreparedSources> PrepareSources(const config::DaemonConfig& config,
                                       const std::vector<rules::Rule>& rules, bool wrapping,
                                       const std::string& cache_dir,
                                       std::vector<Diagnostic>& notes) {
  PreparedSources prepared;
  for (const config::SourceConfig& source : config.sources) {
    Result<std::unique_ptr<WatchedSource>> made =
        MakeWatchedSource(source, rules, cache_dir, notes);
    if (!made) {
      return made.error();
    }
    prepared.sources.push_back(std::move(*made));
  }
  if (wrapping) {
    config::SourceConfig wrap;
    wrap.name = "wrap";
    wrap.tags = {"train"};
    Result<std::unique_ptr<WatchedSource>> made = MakeWatchedSource(wrap, rules, cache_dir, notes);
    if (!made) {
      return made.error();
    }
    prepared.wrap = std::move(*made);
  }
  return prepared;
}

Sources::Sources(uv_loop_t* loop, std::string kmsg_device, OnFirings on_firings,
                 std::function<void()> save_soon, ops::IncidentHistory fired,
                 std::vector<source::SavedTail> saved, bool first_start)
    : loop_(loop),
      kmsg_device_(std::move(kmsg_device)),
      on_firings_(std::move(on_firings)),
      save_soon_(std::move(save_soon)),
      fired_(std::move(fired)),
      saved_(std::move(saved)),
      first_start_(first_start),
      writer_scan_(
          loop,
          [this] {
            std::set<source::FileId> files;
            for (auto& source : sources_) {
              if (source->tails) {
                for (auto& [id, file] : source->tails->files()) {
                  files.insert(id);
                }
              }
            }
            last_writer_scan_ = Clock::now();
            return files;
          },
          [this](const source::WriterScan::Found& found) { OnWritersFound(found); }),
      writer_soon_(loop, [this] { writer_scan_.Request(); }),
      traceback_timer_(loop, [this] { CloseQuietTracebacks(); }) {}

Sources::~Sources() { Close(); }

void Sources::Apply(PreparedSources prepared, const config::DaemonConfig& config) {
  config_ = config;
  std::map<std::string, std::unique_ptr<WatchedSource>> old;
  for (auto& source : sources_) {
    old.emplace(source->config.name, std::move(source));
  }
  sources_.clear();
  auto take_rules = [](WatchedSource& kept, WatchedSource& fresh) {
    kept.line_rules = fresh.line_rules;
    kept.progress_rules = fresh.progress_rules;
    kept.silence_rules = fresh.silence_rules;
    kept.exit_rules = fresh.exit_rules;
    kept.SwapRules();
  };
  for (auto& source : prepared.sources) {
    auto kept = old.find(source->config.name);
    if (kept != old.end() && kept->second->config.kmsg == source->config.kmsg) {
      WatchedSource& previous = *kept->second;
      const bool paths_changed = previous.config.paths != source->config.paths;
      previous.config = source->config;
      take_rules(previous, *source);
      if (previous.tails && paths_changed) {
        previous.tails->Reconfigure(previous.config, config_.watch);
      }
      sources_.push_back(std::move(kept->second));
      old.erase(kept);
      continue;
    }
    sources_.push_back(std::move(source));
    Start(*sources_.back());
  }
  for (auto& [name, source] : old) {
    spdlog::info("source {} removed", name);
    if (source->tails) {
      source->tails->Close();
    }
  }
  if (prepared.wrap) {
    if (wrap_) {
      take_rules(*wrap_, *prepared.wrap);
    } else {
      wrap_ = std::move(prepared.wrap);
    }
  }
}

std::unique_ptr<detect::StreamDetector> Sources::MakeStream(WatchedSource& source,
                                                            const std::string& name,
                                                            const source::FileTail* file) {
  detect::StreamIdentity identity{source.config.name, name,
                                  file != nullptr ? file->id().ToString() : "",
                                  file != nullptr ? file->fingerprint() : source::Fingerprint{}};
  Result<std::unique_ptr<detect::StreamDetector>> stream = detect::StreamDetector::Create(
      identity, source.line_rules, config_.incident.context_lines, !source.progress_rules.empty());
  if (!stream) {
    spdlog::error("source {}: {}: {}", source.config.name, name, stream.error().message);
    return nullptr;
  }
  if (file == nullptr) {
    return std::move(*stream);
  }
  if (writer_soon_ && !writer_soon_.active()) {
    // Who writes a new file is best learned while the writer is young: a job killed a second
    // after it started must still be known to have died.
    writer_soon_.Start(std::chrono::milliseconds(200));
  }
  // Lines of this file that already fired before a restart must not fire again.
  auto [begin, end] = fired_.fired.equal_range(identity.file_id);
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
  return std::move(*stream);
}

void Sources::Start(WatchedSource& source) {
  WatchedSource* state = &source;
  if (source.config.kmsg) {
    source.kmsg_stream = MakeStream(source, "kmsg", nullptr);
    source.kmsg = std::make_unique<source::KmsgReader>();
    if (source.kmsg_stream) {
      source.kmsg_stream->MarkLive();
      source.kmsg->Start(loop_, kmsg_device_, [this, state](const source::LineBatch& batch) {
        OnBatch(*state, *state->kmsg_stream, batch, 0);
      });
    }
    return;
  }
  auto stream_of = [state](const source::TailedFile& file) -> detect::StreamDetector& {
    return *state->file_streams.at(file.tail.id());
  };
  source::TailSet::Hooks hooks;
  hooks.on_open = [this, state](source::TailedFile& file) {
    std::unique_ptr<detect::StreamDetector> stream =
        MakeStream(*state, file.tail.path(), &file.tail);
    if (!stream) {
      return false;
    }
    state->file_streams[file.tail.id()] = std::move(stream);
    return true;
  };
  hooks.on_batch = [this, state, stream_of](source::TailedFile& file,
                                            const source::LineBatch& batch, std::uint64_t offset) {
    detect::StreamDetector& stream = stream_of(file);
    if (file.caught_up) {
      stream.MarkLive();
    }
    OnBatch(*state, stream, batch, offset);
    if (stream.writers().empty() && Clock::now() - last_writer_scan_ >= kWriterScanEvery) {
      writer_scan_.Request();  // a quiet daemon scans nothing; one reading unknown writers does
    }
  };
  hooks.on_pending = [state, stream_of](source::TailedFile& file) {
    if (!file.tail.pending().empty()) {
      detect::StreamDetector& stream = stream_of(file);
      if (file.caught_up) {
        stream.MarkLive();
      }
      stream.OnPending(file.tail.pending(), file.tail.position().next_line, Clock::now());
      state->silence.OnRedraw(Clock::now());
    }
  };
  hooks.on_changed = [stream_of](source::TailedFile& file) {
    detect::StreamDetector& stream = stream_of(file);
    stream.set_name(file.tail.path());
    stream.set_fingerprint(file.tail.fingerprint());
  };
  hooks.on_truncated = [stream_of](source::TailedFile& file) {
    stream_of(file).SuppressThrough(0);
  };
  hooks.on_close = [this, state](source::TailedFile& file) {
    auto found = state->file_streams.find(file.tail.id());
    if (found == state->file_streams.end()) {
      return;
    }
    std::vector<detect::Firing> firings;
    found->second->CloseTracebacks(std::chrono::system_clock::now(), firings);
    on_firings_(firings, nullptr);
    state->file_streams.erase(found);
  };
  hooks.durable = [stream_of](const source::TailedFile& file) {
    return stream_of(file).Durable(file.tail.position());
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
  source.tails = std::make_unique<source::TailSet>(
      loop_, source.config, config_.watch, std::move(hooks), std::move(saved), first_start_);
  for (const std::string& path : excluded_) {
    source.tails->Exclude(path);
  }
  source.tails->Start();
}

void Sources::OnBatch(WatchedSource& source, detect::StreamDetector& stream,
                      const source::LineBatch& batch, std::uint64_t offset) {
  const SteadyTime now = Clock::now();
  source.silence.OnOutput(now);
  source.lines += batch.cut ? 0 : batch.size();
  source.bytes += batch.text.size();
  std::vector<detect::Firing> firings;
  stream.OnBatch(batch, offset, now, std::chrono::system_clock::now(), firings);
  on_firings_(firings, &stream);
  if (stream.TracebackOpen() && !traceback_timer_.active()) {
    traceback_timer_.Start(kTracebackQuiet);
  }
  save_soon_();
}

void Sources::Fire(detect::StreamDetector& stream, std::vector<detect::Event> events,
                   detect::StreamDetector* holder) {
  if (events.empty()) {
    return;
  }
  std::vector<detect::Firing> firings;
  for (detect::Event& event : events) {
    firings.push_back(stream.MakeFiring(std::move(event), std::chrono::system_clock::now()));
  }
  on_firings_(firings, holder);
}

void Sources::CloseQuietTracebacks() {
  const SteadyTime now = Clock::now();
  bool still_open = false;
  ForEachSource([&](WatchedSource& source) {
    source.ForEachStream([&](detect::StreamDetector& stream, source::TailedFile*) {
      if (!stream.TracebackOpen()) {
        return;
      }
      if (now - stream.last_output() >= kTracebackQuiet) {
        std::vector<detect::Firing> firings;
        stream.CloseTracebacks(std::chrono::system_clock::now(), firings);
        on_firings_(firings, &stream);
      } else {
        still_open = true;
      }
    });
  });
  if (still_open) {
    traceback_timer_.Start(kTracebackQuiet);
  }
}

void Sources::Tick(SteadyTime now) {
  for (auto& source : sources_) {
    if (source->tails) {
      source->tails->Sweep(now);
    }
  }
  CheckWriters(now);
  ForEachSource([&](WatchedSource& source) {
    if (!source.progress_rules.empty()) {
      source.ForEachStream([&](detect::StreamDetector& stream, source::TailedFile*) {
        if (stream.live()) {
          Fire(stream, detect::StalledBars(stream.progress(), source.progress_rules, now), nullptr);
        }
      });
    }
    if (source.silence_rules.empty() || source.config.kmsg) {
      return;
    }
    // Silence means something only where output was expected: a stream exists and its job
    // has not ended (a finished job is quiet for good reason).
    detect::StreamDetector* live = nullptr;
    source.ForEachStream([&](detect::StreamDetector& stream, source::TailedFile*) {
      if (live == nullptr && stream.live() && !stream.progress().ended()) {
        live = &stream;
      }
    });
    if (live != nullptr) {
      Fire(*live, source.silence.Check(source.silence_rules, source.config.name, true, now),
           nullptr);
    }
  });
}

void Sources::CheckWriters(SteadyTime now) {
  for (auto& source : sources_) {
    if (!source->tails) {
      continue;
    }
    source->ForEachStream([&](detect::StreamDetector& stream, source::TailedFile* file) {
      std::vector<source::WriterProcess>& writers = stream.writers();
      if (writers.empty() || file == nullptr) {
        return;
      }
      std::vector<source::WriterProcess> gone;
      std::erase_if(writers, [&](const source::WriterProcess& writer) {
        if (Alive(writer.pid)) {
          return false;
        }
        gone.push_back(writer);
        return true;
      });
      if (gone.empty() || !writers.empty()) {
        return;
      }
      // Read what the writer left last, then judge.
      source->tails->ReadNow(*file);
      std::string who;
      for (const source::WriterProcess& writer : gone) {
        who += (who.empty() ? "" : ", ") + std::to_string(writer.pid) + " (" + writer.comm + ")";
      }
      spdlog::info("source {}: the writers of {} exited: {}", source->config.name,
                   stream.identity().name, who);
      if (std::optional<detect::Event> event =
              detect::WriterExited(stream.progress(), stream.last_line(), gone, now)) {
        std::vector<detect::Firing> firings{
            stream.MakeFiring(std::move(*event), std::chrono::system_clock::now())};
        firings.back().writers = gone;  // gone, but the capture should know whom it lost
        on_firings_(firings, nullptr);
      }
    });
  }
}

void Sources::OnWritersFound(const source::WriterScan::Found& found) {
  for (auto& source : sources_) {
    for (auto& [id, stream] : source->file_streams) {
      auto writers = found.find(id);
      if (writers != found.end() && !writers->second.empty()) {
        stream->set_writers(writers->second);  // exits are noticed by CheckWriters, one by one
      }
    }
  }
}

void Sources::Close() {
  writer_scan_.Stop();
  for (auto& source : sources_) {
    if (source->tails) {
      source->tails->Close();
    }
    if (source->kmsg) {
      source->kmsg->Stop();
    }
  }
  sources_.clear();
  wrap_.reset();
  writer_soon_.Reset();
  traceback_timer_.Reset();
}

void Sources::SaveTo(source::TailState& state) const {
  for (const auto& source : sources_) {
    if (source->tails) {
      source->tails->SaveTo(state.tails);
    }
  }
}

void Sources::ReleaseIncidentHolds() {
  ForEachSource([](WatchedSource& source) {
    source.ForEachStream(
        [](detect::StreamDetector& stream, source::TailedFile*) { stream.ReleaseIncidentHold(); });
  });
}

void Sources::FillCapture(capture::CaptureRequest& request) {
  std::set<int> pids(request.pids.begin(), request.pids.end());
  ForEachSource([&](WatchedSource& source) {
    source.ForEachStream([&](detect::StreamDetector& stream, source::TailedFile* file) {
      if (file != nullptr) {
        request.log_files.push_back(file->tail.path());
      }
      for (const source::WriterProcess& writer : stream.writers()) {
        pids.insert(writer.pid);
        request.remembered.push_back(writer);
      }
    });
  });
  for (const detect::Firing& firing : request.incident.firings) {
    for (const source::WriterProcess& writer : firing.writers) {
      pids.insert(writer.pid);  // gone by now, perhaps, but named in the manifest
      request.remembered.push_back(writer);
    }
  }
  request.pids.assign(pids.begin(), pids.end());
  for (auto& source : sources_) {
    for (const std::string& pattern : source->config.paths) {
      request.watched_dirs.push_back(source::LiteralDirOf(pattern));
    }
  }
}

std::vector<ops::SourceSnapshot> Sources::Snapshot(SteadyTime now,
                                                   std::chrono::system_clock::time_point wall_now) {
  std::vector<ops::SourceSnapshot> snapshots;
  ForEachSource([&](WatchedSource& source) {
    ops::SourceSnapshot snapshot;
    snapshot.name = source.config.name;
    snapshot.tags = source.config.tags;
    snapshot.paths = source.config.paths;
    snapshot.lines = source.lines;
    snapshot.bytes = source.bytes;
    source.ForEachStream([&](detect::StreamDetector& stream, source::TailedFile* file) {
      ops::StreamSnapshot entry = SnapshotOf(stream, now, wall_now);
      if (file == nullptr) {
        snapshot.streams.push_back(std::move(entry));
        return;
      }
      entry.offset = file->tail.position().offset;
      entry.durable_offset = stream.Durable(file->tail.position()).offset;
      entry.writers = stream.writers();
      entry.gone = file->gone_since.has_value();
      snapshot.files.push_back(std::move(entry));
    });
    if (source.config.kmsg) {
      snapshot.kmsg_running = source.kmsg && source.kmsg->running();
    }
    if (source.tails) {
      snapshot.parked_copies = source.tails->parked_copies();
    }
    snapshots.push_back(std::move(snapshot));
  });
  return snapshots;
}

std::uint64_t Sources::Activity() const {
  std::uint64_t sum = 0;
  auto add = [&](const WatchedSource& source) {
    sum = sum * 31 + source.lines;
    sum = sum * 31 + source.bytes;
    sum = sum * 31 + (source.tails ? source.tails->files().size() : 0);
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
    count += source->tails ? source->tails->files().size() : 0;
  }
  return count;
}

bool Sources::StartWrap(int pid, const std::string& comm) {
  for (const char* name : {"wrap:stdout", "wrap:stderr"}) {
    wrap_->wrap_streams.push_back(MakeStream(*wrap_, name, nullptr));
    if (!wrap_->wrap_streams.back()) {
      return false;  // logged by MakeStream
    }
    wrap_->wrap_streams.back()->MarkLive();
    wrap_->wrap_streams.back()->set_writers({source::WriterProcess{pid, comm}});
  }
  return true;
}

void Sources::OnWrapBatch(int index, const source::LineBatch& batch) {
  OnBatch(*wrap_, *wrap_->wrap_streams[static_cast<std::size_t>(index)], batch, 0);
}

void Sources::OnWrapPending(int index, std::string_view pending) {
  detect::StreamDetector& stream = *wrap_->wrap_streams[static_cast<std::size_t>(index)];
  stream.OnPending(pending, stream.last_line() + 1, Clock::now());
  wrap_->silence.OnRedraw(Clock::now());
}

void Sources::OnWrapEnded(const source::ChildEnd& end, const std::string& who) {
  if (!wrap_ || wrap_->wrap_streams.empty()) {
    return;
  }
  for (auto& stream : wrap_->wrap_streams) {
    std::vector<detect::Firing> firings;
    stream->progress().EndJob();
    stream->CloseTracebacks(std::chrono::system_clock::now(), firings);
    on_firings_(firings, stream.get());
  }
  Fire(*wrap_->wrap_streams.back(), detect::ExitEvents(wrap_->exit_rules, end, who), nullptr);
}

void Sources::Exclude(const std::string& path) {
  excluded_.push_back(path);
  for (auto& source : sources_) {
    if (source->tails) {
      source->tails->Exclude(path);
    }
  }
}

}  // namespace trainwatch::app
