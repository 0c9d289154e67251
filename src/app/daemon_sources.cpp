// Sources and streams: file sources (TailSet), kmsg, the wrapped command; lines to Streams.
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>

#include "app/daemon_internal.h"

namespace trainwatch::app::daemon_internal {
namespace {

bool AnyTag(const rules::Rule& rule, const std::vector<std::string>& tags) {
  return std::any_of(tags.begin(), tags.end(),
                     [&](const std::string& t) { return rule.HasTag(t); });
}

}  // namespace

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
    ArmTracebackTimer();
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
    ArmTracebackTimer();
  }
}

void Daemon::ArmTracebackTimer() {
  uv_timer_start(
      traceback_timer_.get(),
      [](uv_timer_t* timer) {
        if (auto* self = static_cast<Daemon*>(timer->data)) {
          self->CloseQuietTracebacks();
        }
      },
      kTracebackQuiet.count(), 0);
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
  // The incident the end belongs to is written, its bundle captured and its hooks run
  // before we go.
  stop_after_settle_ = true;
  StopIfWrapDone();
}

}  // namespace trainwatch::app::daemon_internal
