#include "app/sources.h"

#include <spdlog/spdlog.h>

#include <set>

namespace trainwatch::app {
namespace {

// A traceback is over when its writer has been quiet this long: Python prints one at once.
constexpr auto kTracebackQuiet = std::chrono::milliseconds(300);
// New files are scanned for at once; a file that grows while no writer is known is scanned
// for at most this often (its writer may be in another PID namespace, invisible to us).
constexpr auto kWriterScanEvery = std::chrono::seconds(30);

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
    auto watched = std::make_unique<WatchedSource>();
    watched->config = source;
    watched->rules = std::move(*built);
    return watched;
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
              if (source->tails) {
                for (auto& [id, file] : source->tails->files()) {
                  files.insert(id);
                }
              }
            }
            last_writer_scan_ = env_.SteadyNow();
            return files;
          },
          [this](const source::WriterScan::Found& found) { OnWritersFound(found); }),
      writer_soon_(env.NewTimer([this] { writer_scan_.Request(); })),
      traceback_timer_(env.NewTimer([this] { CloseQuietTracebacks(); })) {}

Sources::~Sources() { Close(); }

void Sources::Apply(PreparedSources prepared, const config::DaemonConfig& config) {
  watch_ = config.watch;
  context_lines_ = config.incident.context_lines;
  std::map<std::string, std::unique_ptr<WatchedSource>> old;
  for (auto& source : sources_) {
    old.emplace(source->config.name, std::move(source));
  }
  sources_.clear();
  for (auto& source : prepared.sources) {
    auto kept = old.find(source->config.name);
    if (kept != old.end() && kept->second->config.kmsg == source->config.kmsg) {
      WatchedSource& previous = *kept->second;
      const bool paths_changed = previous.config.paths != source->config.paths;
      previous.config = source->config;
      previous.SwapRules(std::move(source->rules));
      if (previous.tails && paths_changed) {
        previous.tails->Reconfigure(previous.config, watch_);
      }
      sources_.push_back(std::move(kept->second));
      old.erase(kept);
      continue;
    }
    source->silence = detect::SilenceWatch(env_.SteadyNow());
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
      wrap_->SwapRules(std::move(prepared.wrap->rules));
    } else {
      wrap_ = std::move(prepared.wrap);
      wrap_->silence = detect::SilenceWatch(env_.SteadyNow());
    }
  }
}

std::unique_ptr<detect::StreamDetector> Sources::MakeStream(WatchedSource& source,
                                                            const std::string& name,
                                                            const source::FileTail* file) {
  detect::StreamIdentity identity{source.config.name, name,
                                  file != nullptr ? file->id().ToString() : "",
                                  file != nullptr ? file->fingerprint() : source::Fingerprint{}};
  Result<std::unique_ptr<detect::StreamDetector>> stream =
      detect::StreamDetector::Create(identity, source.rules.lines, context_lines_,
                                     !source.rules.progress.empty(), env_.SteadyNow());
  if (!stream) {
    spdlog::error("source {}: {}: {}", source.config.name, name, stream.error().message);
    return nullptr;
  }
  if (file == nullptr) {
    return std::move(*stream);
  }
  if (writer_soon_ && !writer_soon_->active()) {
    // Who writes a new file is best learned while the writer is young: a job killed a second
    // after it started must still be known to have died.
    writer_soon_->Start(std::chrono::milliseconds(200), {});
  }
  // Lines of this file that already fired before a restart must not fire again.
  auto [begin, end] = fired_.fired.equal_range(identity.file_id);
  if (begin != end) {
    for (auto it = begin; it != end; ++it) {
      const std::optional<source::Fingerprint> now = file->HeadFingerprint(it->second.head_bytes);
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
      source.kmsg->Start(kmsg_loop_, kmsg_device_, [this, state](const source::LineBatch& batch) {
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
    if (stream.writers().empty() && env_.SteadyNow() - last_writer_scan_ >= kWriterScanEvery) {
      writer_scan_.Request();  // a quiet daemon scans nothing; one reading unknown writers does
    }
  };
  hooks.on_pending = [this, state, stream_of](source::TailedFile& file) {
    if (!file.tail.pending().empty()) {
      detect::StreamDetector& stream = stream_of(file);
      if (file.caught_up) {
        stream.MarkLive();
      }
      const SteadyTime now = env_.SteadyNow();
      stream.OnPending(file.tail.pending(), file.tail.position().next_line, now);
      state->silence.OnRedraw(now);
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
    found->second->CloseTracebacks(env_.WallNow(), firings);
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
  source.tails = std::make_unique<source::TailSet>(env_, source.config, watch_, std::move(hooks),
                                                   std::move(saved), first_start_);
  for (const std::string& path : excluded_) {
    source.tails->Exclude(path);
  }
  source.tails->Start();
}

void Sources::OnBatch(WatchedSource& source, detect::StreamDetector& stream,
                      const source::LineBatch& batch, std::uint64_t offset) {
  const SteadyTime now = env_.SteadyNow();
  source.silence.OnOutput(now);
  source.lines += batch.cut ? 0 : batch.size();
  source.bytes += batch.text.size();
  std::vector<detect::Firing> firings;
  stream.OnBatch(batch, offset, now, env_.WallNow(), firings);
  on_firings_(firings, &stream);
  if (stream.TracebackOpen() && !traceback_timer_->active()) {
    traceback_timer_->Start(kTracebackQuiet, {});
  }
  save_soon_();
}

void Sources::Fire(detect::StreamDetector& stream, std::vector<detect::Event> events) {
  if (events.empty()) {
    return;
  }
  std::vector<detect::Firing> firings;
  for (detect::Event& event : events) {
    firings.push_back(stream.MakeFiring(std::move(event), env_.WallNow()));
  }
  on_firings_(firings, nullptr);  // they hold no line of the stream back
}

void Sources::CloseQuietTracebacks() {
  const SteadyTime now = env_.SteadyNow();
  bool still_open = false;
  ForEachSource([&](WatchedSource& source) {
    source.ForEachStream([&](detect::StreamDetector& stream, source::TailedFile*) {
      if (!stream.TracebackOpen()) {
        return;
      }
      if (now - stream.last_output() >= kTracebackQuiet) {
        std::vector<detect::Firing> firings;
        stream.CloseTracebacks(env_.WallNow(), firings);
        on_firings_(firings, &stream);
      } else {
        still_open = true;
      }
    });
  });
  if (still_open) {
    traceback_timer_->Start(kTracebackQuiet, {});
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
    if (!source.rules.progress.empty()) {
      source.ForEachStream([&](detect::StreamDetector& stream, source::TailedFile*) {
        if (stream.live()) {
          Fire(stream, detect::StalledBars(stream.progress(), source.rules.progress, now));
        }
      });
    }
    if (source.rules.silence.empty() || source.config.kmsg) {
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
      Fire(*live, source.silence.Check(source.rules.silence, source.config.name, now));
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
        if (env_.ProcessExists(writer.pid)) {
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
        std::vector<detect::Firing> firings{stream.MakeFiring(std::move(*event), env_.WallNow())};
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
  writer_soon_.reset();
  traceback_timer_.reset();
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
  const SteadyTime now = env_.SteadyNow();
  stream.OnPending(pending, stream.last_line() + 1, now);
  wrap_->silence.OnRedraw(now);
}

void Sources::OnWrapEnded(const source::ChildEnd& end, const std::string& who) {
  if (!wrap_ || wrap_->wrap_streams.empty()) {
    return;
  }
  for (auto& stream : wrap_->wrap_streams) {
    std::vector<detect::Firing> firings;
    stream->progress().EndJob();
    stream->CloseTracebacks(env_.WallNow(), firings);
    on_firings_(firings, stream.get());
  }
  Fire(*wrap_->wrap_streams.back(), detect::ExitEvents(wrap_->rules.exit, end, who));
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
