#include "detect/watched_source.h"

#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <algorithm>

namespace trainwatch::detect {

void WatchedSource::Start(Env& env, Outlet outlet, std::size_t context_lines, Producer producer) {
  env_ = &env;
  outlet_ = std::move(outlet);
  context_lines_ = context_lines;
  silence_ = SilenceWatch(env.SteadyNow());
  if (config_.processes) {
    // Its lines come from the owner's look at the jobs' processes (OnProcessLine).
    processes_stream_ = MakeStream("processes", nullptr);
    if (processes_stream_) {
      processes_stream_->MarkLive();
    }
    return;
  }
  if (config_.kmsg) {
    kmsg_stream_ = MakeStream("kmsg", nullptr);
    kmsg_ = std::make_unique<source::KmsgReader>();
    if (kmsg_stream_ && producer.kmsg_loop == nullptr) {
      spdlog::error("source {}: the kernel log cannot be read here (no libuv loop for it)",
                    config_.name);
    } else if (kmsg_stream_) {
      kmsg_stream_->MarkLive();
      kmsg_->Start(producer.kmsg_loop, producer.kmsg_device,
                   [this](const source::LineBatch& batch) { OnBatch(*kmsg_stream_, batch, 0); });
    }
    return;
  }
  tails_ = std::make_unique<source::TailSet>(env, config_, producer.watch, FileHooks(),
                                             std::move(producer.saved), producer.first_start);
  for (const std::string& path : producer.excluded) {
    tails_->Exclude(path);
  }
  tails_->UseDescriptorBudget(std::move(producer.descriptors));
  tails_->Start();
}

source::TailSet::Hooks WatchedSource::FileHooks() {
  auto stream_of = [this](const source::TailedFile& file) -> StreamDetector& {
    return *file_streams_.at(file.tail.id());
  };
  source::TailSet::Hooks hooks;
  hooks.on_open = [this](source::TailedFile& file) {
    std::unique_ptr<StreamDetector> stream = MakeStream(file.tail.path(), &file.tail);
    if (!stream) {
      return false;
    }
    file_streams_[file.tail.id()] = std::move(stream);
    return true;
  };
  hooks.on_batch = [this, stream_of](source::TailedFile& file, const source::LineBatch& batch,
                                     std::uint64_t offset) {
    StreamDetector& stream = stream_of(file);
    if (file.caught_up) {
      stream.MarkLive();
    }
    OnBatch(stream, batch, offset);
    if (stream.writers().empty()) {
      outlet_.unknown_writers();
    }
  };
  hooks.on_pending = [this, stream_of](source::TailedFile& file) {
    if (!file.tail.pending().empty()) {
      StreamDetector& stream = stream_of(file);
      if (file.caught_up) {
        stream.MarkLive();
      }
      OnPending(stream, file.tail.pending(), file.tail.position().next_line);
    }
  };
  hooks.on_changed = [stream_of](source::TailedFile& file) {
    StreamDetector& stream = stream_of(file);
    stream.set_name(file.tail.path());
    stream.set_fingerprint(file.tail.fingerprint());
  };
  hooks.on_truncated = [stream_of](source::TailedFile& file) {
    stream_of(file).SuppressThrough(0);
  };
  hooks.on_close = [this](source::TailedFile& file) {
    auto found = file_streams_.find(file.tail.id());
    if (found == file_streams_.end()) {
      return;
    }
    std::vector<Firing> firings;
    found->second->CloseTracebacks(env_->WallNow(), firings);
    outlet_.fired(firings, nullptr);
    file_streams_.erase(found);
  };
  hooks.on_close_write = [this, stream_of](source::TailedFile& file) {
    stream_of(file).MarkWriterClosed();
    if (outlet_.writer_closed) {
      outlet_.writer_closed();
    }
  };
  hooks.durable = [stream_of](const source::TailedFile& file) {
    return stream_of(file).Durable(file.tail.position());
  };
  return hooks;
}

std::unique_ptr<StreamDetector> WatchedSource::MakeStream(const std::string& name,
                                                          const source::FileTail* file) {
  StreamIdentity identity{config_.name, name, file != nullptr ? file->id().ToString() : "",
                          std::nullopt,
                          file != nullptr ? file->fingerprint() : source::Fingerprint{}};
  if (file != nullptr) {
    if (Result<FileStatus> info = file->Status(); info) {
      // The file read, not whatever its path names later; one anyone may write is no one's.
      identity.owner = info->anyone_may_write ? std::nullopt : info->owner;
    }
  }
  Result<std::unique_ptr<StreamDetector>> stream = StreamDetector::Create(
      identity, rules_.lines, context_lines_, !rules_.progress.empty(), env_->SteadyNow());
  if (!stream) {
    spdlog::error("source {}: {}: {}", config_.name, name, stream.error().message);
    return nullptr;
  }
  if (file != nullptr) {
    outlet_.new_file();
    outlet_.suppress_fired(**stream, *file);
  }
  return std::move(*stream);
}

void WatchedSource::OnBatch(StreamDetector& stream, const source::LineBatch& batch,
                            std::uint64_t offset) {
  const SteadyTime now = env_->SteadyNow();
  silence_.OnOutput(now);
  hang_told_ = false;
  lines_ += batch.cut ? 0 : batch.size();
  bytes_ += batch.text.size();
  std::vector<Firing> firings;
  stream.OnBatch(batch, offset, now, env_->WallNow(), firings);
  outlet_.fired(firings, &stream);
  CheckCaught(stream);
  if (config_.kmsg && outlet_.oom_killed) {
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (std::optional<int> pid = OomKilledPid(batch.Record(i))) {
        outlet_.oom_killed(*pid, batch.Record(i));  // a writer of a log may be the victim
      }
    }
  }
  if (stream.TracebackOpen()) {
    outlet_.traceback_open();
  }
  outlet_.read();
}

void WatchedSource::OnPending(StreamDetector& stream, std::string_view pending,
                              std::uint64_t line) {
  const SteadyTime now = env_->SteadyNow();
  stream.OnPending(pending, line, now);
  silence_.OnRedraw(now);
  CheckCaught(stream);
}

void WatchedSource::CheckCaught(StreamDetector& stream) {
  if (stream.CrashCaught()) {
    spdlog::info(
        "source {}: {} went on after the crash it reported at line {}: a caught "
        "exception",
        config_.name, stream.identity().name, stream.crash_line());
    if (outlet_.crash_caught) {
      outlet_.crash_caught(stream);
    }
    stream.ForgetCrash();
  }
}

void WatchedSource::Fire(StreamDetector& stream, std::vector<Event> events) {
  if (events.empty()) {
    return;
  }
  // A stall and the silence that follows it are one hang: told again, it is a follow-up.
  const bool hang_told = hang_told_;
  std::vector<Firing> firings;
  firings.reserve(events.size());
  for (Event& event : events) {
    if (event.kind == rules::RuleKind::kHang) {
      hang_told_ = true;
      if (hang_told) {
        event = AsFollowUp(std::move(event), "hang");
      }
    }
    firings.push_back(stream.MakeFiring(std::move(event), env_->WallNow()));
  }
  outlet_.fired(firings, nullptr);  // they hold no line of the stream back
}

void WatchedSource::Reconfigure(config::SourceConfig config, rules::SourceRules rules,
                                const config::WatchConfig& watch, std::size_t context_lines) {
  const bool paths_changed = config_.paths != config.paths;
  config_ = std::move(config);
  rules_ = std::move(rules);
  context_lines_ = context_lines;
  ForEachStream([&](StreamDetector& stream, source::TailedFile*) {
    if (Status swapped = stream.SetRules(rules_.lines); !swapped) {
      spdlog::error("source {}: {}: {}", config_.name, stream.identity().name,
                    swapped.error().message);
    }
  });
  if (tails_ && paths_changed) {
    tails_->Reconfigure(config_, watch);
  }
}

void WatchedSource::Close() {
  if (tails_) {
    tails_->Close();
  }
  if (kmsg_) {
    kmsg_->Stop();
  }
}

void WatchedSource::Exclude(const std::string& path) {
  if (tails_) {
    tails_->Exclude(path);
  }
}

void WatchedSource::CheckTime(SteadyTime now) {
  if (!rules_.progress.empty() || !rules_.pace.empty()) {
    ForEachStream([&](StreamDetector& stream, source::TailedFile*) {
      if (stream.live()) {
        Fire(stream, StalledBars(stream.progress(), rules_.progress, now));
        Fire(stream, SlowBars(stream.progress(), rules_.pace, now));
      }
    });
  }
  if (rules_.silence.empty() || config_.kmsg || config_.processes) {
    return;
  }
  // Silence means something only where output was expected: a stream exists and its job has
  // not ended (a finished job is quiet for good reason).
  StreamDetector* live = nullptr;
  ForEachStream([&](StreamDetector& stream, source::TailedFile*) {
    if (live == nullptr && stream.live() && !stream.progress().ended()) {
      live = &stream;
    }
  });
  if (live != nullptr) {
    Fire(*live, silence_.Check(rules_.silence, config_.name, now));
  }
}

void WatchedSource::CheckWriters(SteadyTime now) {
  if (!tails_) {
    return;
  }
  ForEachStream([&](StreamDetector& stream, source::TailedFile* file) {
    std::vector<source::WriterProcess>& writers = stream.writers();
    if (writers.empty() || file == nullptr) {
      return;
    }
    std::vector<source::WriterProcess> gone;
    for (const source::WriterProcess& writer : writers) {
      if (!env_->ProcessExists(writer.pid)) {
        gone.push_back(writer);
      }
    }
    if (gone.empty()) {
      return;
    }
    stream.WritersDeparted(gone);
    if (gone.size() == writers.size()) {
      // Judged while they are still its writers: the firings of its end (a traceback closed
      // now) name their job by them. A writer is gone as soon as it has exited, before its
      // parent reaps it (a Slurm batch step's shell, a launcher), not only after.
      JudgeWriterGone(stream, *file, gone, now);
    }
    std::erase_if(writers, [&](const source::WriterProcess& writer) {
      return std::any_of(gone.begin(), gone.end(), [&](const source::WriterProcess& ended) {
        return ended.pid == writer.pid;
      });
    });
  });
}

void WatchedSource::WritersNotFound(const std::set<source::FileId>& files, SteadyTime now) {
  if (!tails_) {
    return;
  }
  // Writers known from an earlier scan stay its writers until they exit (CheckWriters): the
  // firings of its end (a traceback closed when quiet) name their job by them.
  ForEachStream([&](StreamDetector& stream, source::TailedFile* file) {
    if (file != nullptr && files.count(file->tail.id()) > 0 && stream.writer_closed() &&
        stream.writers().empty() && !stream.progress().ended()) {
      JudgeWriterGone(stream, *file, {}, now);
    }
  });
}

void WatchedSource::JudgeWriterGone(StreamDetector& stream, source::TailedFile& file,
                                    const std::vector<source::WriterProcess>& gone,
                                    SteadyTime now) {
  tails_->ReadNow(file);  // what the writer left last, before judging
  if (stream.TracebackOpen()) {
    // Nothing more will come: a traceback cut short (the rank was killed while printing it)
    // is whole as it stands, and its writer's death is its end.
    std::vector<Firing> firings;
    stream.CloseTracebacks(env_->WallNow(), firings);
    outlet_.fired(firings, &stream);
  }
  if (ExitedCleanly(gone)) {
    // An exception line it printed last and then exit 0: it survived what it printed.
    stream.DropLastWords();
  } else {
    // Its last words: an exception line nothing followed is the crash it died of.
    std::vector<Firing> last_words;
    stream.CloseLastWords(env_->WallNow(), last_words);
    if (!last_words.empty()) {
      outlet_.fired(last_words, &stream);
    }
  }
  std::string who;
  for (const source::WriterProcess& writer : gone) {
    who += (who.empty() ? "" : ", ") + std::to_string(writer.pid) + " (" + writer.comm + ")";
  }
  spdlog::info("source {}: the writers of {} exited: {}", config_.name, stream.identity().name,
               who.empty() ? "the last one closed it, and no process holds it" : who);
  // The kernel's log naming one of them as the OOM killer's victim is evidence enough.
  std::string oom_line;
  for (const source::WriterProcess& writer : gone) {
    if (oom_line.empty() && outlet_.oom_evidence) {
      oom_line = outlet_.oom_evidence(writer.pid);
    }
  }
  std::optional<Event> event =
      oom_line.empty() ? WriterExited(stream.progress(), stream.EndsMidBar(), gone, now)
                       : OomKilledWriter(stream.progress(), stream.last_line(), gone, oom_line);
  if (event) {
    if (const std::optional<std::string_view> failure = stream.PrintedFailure()) {
      *event = AsFollowUp(std::move(*event), *failure);  // its death is that failure's end
    }
    std::vector<Firing> firings{stream.MakeFiring(std::move(*event), env_->WallNow())};
    firings.back().writers = gone;  // gone, but the capture should know whom it lost
    outlet_.fired(firings, nullptr);
  }
  stream.ForgetFailures();  // the job is over
}

bool WatchedSource::ExitedCleanly(const std::vector<source::WriterProcess>& gone) const {
  if (gone.empty() || !outlet_.wait_status) {
    return false;  // not known how they ended
  }
  return std::all_of(gone.begin(), gone.end(), [&](const source::WriterProcess& writer) {
    const std::optional<int> status = outlet_.wait_status(writer.pid);
    return status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0;
  });
}

bool WatchedSource::CloseQuietTracebacks(SteadyTime now, std::chrono::milliseconds quiet,
                                         std::chrono::milliseconds unfinished_quiet) {
  bool still_open = false;
  ForEachStream([&](StreamDetector& stream, source::TailedFile*) {
    if (!stream.TracebackOpen()) {
      return;
    }
    if (now - stream.last_output() >=
        (stream.TracebackAwaitingException() ? unfinished_quiet : quiet)) {
      std::vector<Firing> firings;
      stream.CloseTracebacks(env_->WallNow(), firings);
      outlet_.fired(firings, &stream);
    } else {
      still_open = true;
    }
  });
  return still_open;
}

bool WatchedSource::StartWrap(Env& env, Outlet outlet, std::size_t context_lines, int pid,
                              const std::string& comm) {
  env_ = &env;
  outlet_ = std::move(outlet);
  context_lines_ = context_lines;
  silence_ = SilenceWatch(env.SteadyNow());
  for (const char* name : {"wrap:stdout", "wrap:stderr"}) {
    wrap_streams_.push_back(MakeStream(name, nullptr));
    if (!wrap_streams_.back()) {
      return false;  // logged by MakeStream
    }
    wrap_streams_.back()->MarkLive();
    source::WriterProcess writer;
    writer.pid = pid;
    writer.comm = comm;
    wrap_streams_.back()->set_writers({std::move(writer)});
    wrap_streams_.back()->set_may_catch(false);
  }
  return true;
}

void WatchedSource::OnProcessLine(const source::WriterProcess* writer, const std::string& line) {
  if (!processes_stream_) {
    return;
  }
  processes_stream_->set_writers(writer != nullptr ? std::vector<source::WriterProcess>{*writer}
                                                   : std::vector<source::WriterProcess>{});
  source::LineBatch batch;
  batch.text = line;
  batch.ends.push_back(static_cast<std::uint32_t>(line.size()));
  batch.first_line = processes_stream_->last_line() + 1;
  OnBatch(*processes_stream_, batch, 0);
}

void WatchedSource::OnWrapBatch(std::size_t index, const source::LineBatch& batch) {
  OnBatch(*wrap_streams_.at(index), batch, 0);
}

void WatchedSource::OnWrapPending(std::size_t index, std::string_view pending) {
  StreamDetector& stream = *wrap_streams_.at(index);
  OnPending(stream, pending, stream.last_line() + 1);
}

void WatchedSource::OnWrapEnded(const source::ChildEnd& end, const std::string& who) {
  if (wrap_streams_.empty()) {
    return;
  }
  // A bar on any of its streams that moved on after a device error on another (stdout's after
  // stderr's): the job survived that error, and its end is its own.
  SteadyTime last_advance{};
  for (const auto& stream : wrap_streams_) {
    last_advance = std::max(last_advance, stream->progress().last_advance());
  }
  std::optional<std::string_view> failure;  // that the command printed; a crash before all
  for (auto& stream : wrap_streams_) {
    std::vector<Firing> firings;
    stream->progress().EndJob();
    stream->CloseTracebacks(env_->WallNow(), firings);
    outlet_.fired(firings, stream.get());
    std::optional<std::string_view> printed = stream->PrintedFailure();
    if (const std::optional<SteadyTime> device_at = stream->device_error_at();
        printed && *printed != "crash" && device_at && *device_at < last_advance) {
      printed.reset();
    }
    if (printed && (!failure || *printed == "crash")) {
      failure = printed;
    }
    stream->ForgetFailures();
  }
  std::vector<Event> events = ExitEvents(rules_.exit, end, who);
  if (failure) {
    // The exit status of a command that printed its crash or device error is that failure's
    // end, however long its teardown took: one failure, one incident (and `wrap --exit-codes
    // verdict` gives that failure's verdict, not the exit rule's).
    for (Event& event : events) {
      event = AsFollowUp(std::move(event), *failure);
    }
  }
  Fire(*wrap_streams_.back(), std::move(events));
}

}  // namespace trainwatch::detect
