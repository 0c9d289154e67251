// WatchedSource: one configured source and its detection — its rules sorted by detector, the
// producer of its lines (a TailSet of files, the kernel log, or the wrapped command's pipes),
// one StreamDetector per stream, what it read, and the checks that run on time (stalled bars,
// silence, writers that vanished). What it finds goes out through its Outlet; the owner
// (app::Sources) decides when to check, keeps the sources of a config together and learns
// who writes which file. Loop thread only.
#pragma once

#include <uv.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "config/daemon_config.h"
#include "core/env.h"
#include "detect/incident.h"
#include "detect/stream_detector.h"
#include "detect/time_detectors.h"
#include "rules/source_rules.h"
#include "source/child_end.h"
#include "source/kmsg_reader.h"
#include "source/tail_set.h"

namespace trainwatch::detect {

class WatchedSource {
 public:
  // What a source tells its owner, and the one thing it asks of it.
  struct Outlet {
    // Firings of `stream` (null for events that hold no line of it: stalls, silence, exits).
    std::function<void(std::vector<Firing>& firings, StreamDetector* stream)> fired;
    // A file is followed from now on: learn who writes it while the writer is young.
    std::function<void()> new_file;
    // Lines came from a stream whose writers are unknown.
    std::function<void()> unknown_writers;
    // The last writer of a file closed it (or died): find who still holds it, soon.
    std::function<void()> writer_closed;
    // A bar of `stream` advanced after the crash it reported: the writer caught the exception
    // and went on, so that crash is a warning if its incident is still open. Optional.
    std::function<void(StreamDetector& stream)> crash_caught;
    // A kernel-log line says the OOM killer killed `pid`. Optional.
    std::function<void(int pid, std::string_view line)> oom_killed;
    // That line, if the kernel's log said so of `pid` lately; empty otherwise. Optional.
    std::function<std::string(int pid)> oom_evidence;
    // How `pid` ended (its wait status), when the kernel's process events told. Optional.
    std::function<std::optional<int>(int pid)> wait_status;
    // A traceback is open and closes once its writer is quiet: check soon.
    std::function<void()> traceback_open;
    // Lines were read: their offsets are to be saved soon.
    std::function<void()> read;
    // Makes `stream` skip the lines of `file` already part of written incidents.
    std::function<void(StreamDetector& stream, const source::FileTail& file)> suppress_fired;
  };
  // Where its lines come from, given at Start.
  struct Producer {
    uv_loop_t* kmsg_loop = nullptr;  // kmsg sources only: /dev/kmsg is read on libuv directly
    std::string kmsg_device;
    config::WatchConfig watch;
    std::vector<source::SavedTail> saved;  // this source's files at the last stop
    bool first_start = true;
    std::vector<std::string> excluded;  // files never to follow (wrap's own log)
    std::shared_ptr<source::DescriptorBudget> descriptors;  // none: no budget of its own
  };

  WatchedSource(config::SourceConfig config, rules::SourceRules rules)
      : config_(std::move(config)), rules_(std::move(rules)) {}
  WatchedSource(const WatchedSource&) = delete;
  WatchedSource& operator=(const WatchedSource&) = delete;

  // Starts reading, with streams of `context_lines` lines of context.
  void Start(Env& env, Outlet outlet, std::size_t context_lines, Producer producer);
  // For `wrap`: its two streams (stdout, stderr), written by `pid` (named `comm`). False when
  // they could not be made (logged).
  bool StartWrap(Env& env, Outlet outlet, std::size_t context_lines, int pid,
                 const std::string& comm);
  // A reload: the same source with new settings and rules. Streams keep their state (one with
  // an open traceback finishes it under the old rules first); changed paths are rescanned.
  void Reconfigure(config::SourceConfig config, rules::SourceRules rules,
                   const config::WatchConfig& watch, std::size_t context_lines);
  // Stops reading; files are closed without a flush (the next start reads on from the offsets).
  void Close();

  // A `processes` source's line (watch/blocked_watch.h), without its newline, about `writer`
  // (null when unknown): its firing names that process, and so its job.
  void OnProcessLine(const source::WriterProcess* writer, const std::string& line);
  void OnWrapBatch(std::size_t index, const source::LineBatch& batch);
  void OnWrapPending(std::size_t index, std::string_view pending);
  // The wrapped command ended: its tracebacks close, `exit` rules judge its end.
  void OnWrapEnded(const source::ChildEnd& end, const std::string& who);
  void Exclude(const std::string& path);

  // Stalled bars and silence, at `now`.
  void CheckTime(SteadyTime now);
  // Writers that are gone: what they wrote last is read, then judged (WriterExited).
  void CheckWriters(SteadyTime now);
  // A writer scan found no process holding these files: those whose last writer closed them
  // since they were last written (and with no writer known) lost their writer.
  void WritersNotFound(const std::set<source::FileId>& files, SteadyTime now);
  // Whether every one of `gone` is known to have exited with status 0.
  bool ExitedCleanly(const std::vector<source::WriterProcess>& gone) const;
  // Tracebacks whose writer has been quiet `quiet` long are closed, or `unfinished_quiet`
  // long while one still lacks its exception line; true if some stay open.
  bool CloseQuietTracebacks(SteadyTime now, std::chrono::milliseconds quiet,
                            std::chrono::milliseconds unfinished_quiet);

  // Calls visit(stream, file) for each stream; `file` is null but for tailed files.
  template <typename F>
  void ForEachStream(F&& visit) {
    if (tails_) {
      // Both maps are ordered by FileId: one walk pairs them, where a lookup per stream made
      // each tick cost N log N (30% of an idle daemon's CPU at 10,000 files).
      auto file = tails_->files().begin();
      for (auto& [id, stream] : file_streams_) {
        while (file != tails_->files().end() && file->first < id) {
          ++file;
        }
        // A stream without its file was closed with its TailSet, and is done.
        if (file != tails_->files().end() && file->first == id) {
          visit(*stream, file->second.get());
        }
      }
    }
    if (kmsg_stream_) {
      visit(*kmsg_stream_, nullptr);
    }
    if (processes_stream_) {
      visit(*processes_stream_, nullptr);
    }
    for (auto& stream : wrap_streams_) {
      visit(*stream, nullptr);
    }
  }

  const config::SourceConfig& config() const { return config_; }
  // A prepared source's compiled rules, for the running source of the same name (a reload).
  rules::SourceRules TakeRules() { return std::move(rules_); }
  const source::TailSet* tails() const { return tails_.get(); }
  source::TailSet* tails() { return tails_.get(); }
  std::map<source::FileId, std::unique_ptr<StreamDetector>>& file_streams() {
    return file_streams_;
  }
  bool kmsg_running() const { return kmsg_ && kmsg_->running(); }
  std::uint64_t lines() const { return lines_; }
  std::uint64_t bytes() const { return bytes_; }

 private:
  std::unique_ptr<StreamDetector> MakeStream(const std::string& name, const source::FileTail* file);
  source::TailSet::Hooks FileHooks();
  void OnBatch(StreamDetector& stream, const source::LineBatch& batch, std::uint64_t offset);
  void OnPending(StreamDetector& stream, std::string_view pending, std::uint64_t line);
  // After new output on `stream`: a crash it reported that its writer went on from.
  void CheckCaught(StreamDetector& stream);
  // The writers of `stream` are gone (`gone`, or never seen): its last words are read, its job
  // ends, and a death mid-bar is a crash.
  void JudgeWriterGone(StreamDetector& stream, source::TailedFile& file,
                       const std::vector<source::WriterProcess>& gone, SteadyTime now);
  // Firings of time-based events (stalls, silence, exits) on `stream`.
  void Fire(StreamDetector& stream, std::vector<Event> events);

  config::SourceConfig config_;
  rules::SourceRules rules_;
  Env* env_ = nullptr;
  Outlet outlet_;
  std::size_t context_lines_ = 0;
  std::unique_ptr<source::TailSet> tails_;
  std::map<source::FileId, std::unique_ptr<StreamDetector>> file_streams_;
  std::unique_ptr<source::KmsgReader> kmsg_;
  std::unique_ptr<StreamDetector> kmsg_stream_;
  std::unique_ptr<StreamDetector> processes_stream_;
  std::vector<std::unique_ptr<StreamDetector>> wrap_streams_;  // stdout, stderr
  SilenceWatch silence_{SteadyTime{}};                         // from when the source starts
  bool hang_told_ = false;   // a stall or silence was reported, and no line came since
  std::uint64_t lines_ = 0;  // read from all its streams since the start, closed ones too
  std::uint64_t bytes_ = 0;
};

}  // namespace trainwatch::detect
