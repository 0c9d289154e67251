// StreamDetector: the detection state of one live byte stream — a tailed file, /dev/kmsg, or a
// wrapped command's stdout or stderr. Runs the same LineDetector as `scan` on each batch,
// tracks progress bars, keeps the last lines for incident context, and knows how far a
// restart may skip: never past an open traceback or an event whose incident is not yet
// written, so a kill -9 loses neither. Single thread (the loop).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "detect/incident.h"
#include "detect/line_detector.h"
#include "detect/progress_tracker.h"
#include "rules/compiled_rules.h"
#include "source/file_tail.h"
#include "source/writers.h"

namespace trainwatch::detect {

struct StreamIdentity {
  std::string source;   // config source name
  std::string name;     // file path, "kmsg", "wrap:stdout"...
  std::string file_id;  // "dev:ino" for files
  // The file's owner when it was opened: the user its lines speak for (capture/speakers.h).
  std::optional<uid_t> owner;
  source::Fingerprint fingerprint;
};

class StreamDetector {
 public:
  static Result<std::unique_ptr<StreamDetector>> Create(
      StreamIdentity identity, std::shared_ptr<const rules::CompiledRules> rules,
      std::size_t context_lines, bool track_progress, SteadyTime created);

  // Detects on `batch` (whose first byte is at `batch_offset` of the stream) and appends
  // what fired to `out`.
  void OnBatch(const source::LineBatch& batch, std::uint64_t batch_offset, SteadyTime now,
               detect::WallTime wall, std::vector<detect::Firing>& out);
  // The unfinished last line as it stands (a tqdm bar in a file has no '\n' until it closes):
  // its progress refreshes count. `line` is its line number.
  void OnPending(std::string_view text, std::uint64_t line, SteadyTime now);
  // The writer paused: ends open tracebacks (a crashed process prints nothing after its
  // traceback, so waiting for the next line would wait forever).
  void CloseTracebacks(detect::WallTime wall, std::vector<detect::Firing>& out);
  bool TracebackOpen() const { return detector_->AnyTracebackOpen(); }
  bool TracebackAwaitingException() const { return detector_->TracebackAwaitingException(); }
  // The writer exited: the lines that fire only as its last words (a bare exception line)
  // fire now, and the crash is this stream's.
  void CloseLastWords(detect::WallTime wall, std::vector<detect::Firing>& out);
  // The writer exited with status 0: what waited to be its last words says nothing.
  void DropLastWords() { detector_->DropLastWords(); }
  // The training loss a metric rule read last from this stream; none when none was.
  std::optional<LineDetector::LastLoss> last_loss() const { return detector_->last_loss(); }
  // The job's own straggler reports this stream's spread rules read.
  const SpreadRuns& spread_runs() const { return detector_->spread_runs(); }
  // Swaps in reloaded rules; progress bars, context and holds stay. A traceback open now
  // finishes under the old rules first.
  Status SetRules(std::shared_ptr<const rules::CompiledRules> rules);

  // A firing for a time-based event (stall, silence, exit) with this stream's last lines.
  detect::Firing MakeFiring(detect::Event event, detect::WallTime wall) const;

  // Events for lines up to `line` were already part of a written incident (before a restart).
  void SuppressThrough(std::uint64_t line) { suppress_through_ = line; }
  // The position a restart must resume from, given how far the file has been read.
  source::TailPosition Durable(source::TailPosition read) const;
  // Incidents holding this stream's firings were written: the holds go.
  void ReleaseIncidentHold() { incident_hold_.reset(); }
  // A firing of this stream joined the open incident: no restart may skip past it until the
  // incident is written.
  void HoldForIncident(const detect::Firing& firing);

  // The processes writing this stream (a file's, from /proc; the wrapped command): firings
  // carry them, so the capture stage knows whose environment and stacks to collect.
  void set_writers(std::vector<source::WriterProcess> writers) {
    live_ = live_ || !writers.empty();
    if (!writers.empty()) {
      departed_.clear();
    }
    writers_ = std::move(writers);
  }
  const std::vector<source::WriterProcess>& writers() const { return writers_; }
  // Writers that exited (CheckWriters): remembered, for the firings that come after them, until
  // other writers are known. At most kMaxDeparted, the latest.
  void WritersDeparted(const std::vector<source::WriterProcess>& gone);
  static constexpr std::size_t kMaxDeparted = 64;
  std::vector<source::WriterProcess>& writers() { return writers_; }

  // Output seen as it was written (not only a backlog read at once), or a known writer: only
  // then can a bar stall or the stream fall silent. A log of a job that finished while the
  // daemon was away is history, and its last bar no hang.
  void MarkLive() { live_ = true; }
  bool live() const { return live_; }

  // The file's last writer closed it (inotify's IN_CLOSE_WRITE) and nothing came since: when
  // no process is found holding it, its writer is gone, seen or not.
  void MarkWriterClosed() { writer_closed_ = true; }
  bool writer_closed() const { return writer_closed_; }
  // The line of the last crash this stream reported (its traceback's last line), 0 when none
  // since it was caught or judged.
  std::uint64_t crash_line() const { return crash_line_; }
  // A bar of this stream advanced after its last crash, and the crash can only have been that
  // writer's: it caught the exception and went on (a training loop that logs and continues).
  // Only where the stream has one known writer process and has shown no rank tags
  // (`[rank3]:`, `[default3]:`, `[1,3]<stdout>:`), and is not a wrapped launcher: in a log
  // that several ranks share, the other ranks' bars move on after one rank dies, until the
  // collective watchdog stops them, and that is no catch. Nor is the bar of another process
  // than the one writing at the crash: the job restarted into the same log.
  bool CrashCaught() const {
    return crash_line_ != 0 && may_catch_ && !saw_writer_tags_ && writers_.size() == 1 &&
           writers_[0].pid == crash_writer_ && progress_.last_advance_line() > crash_line_;
  }
  // The failure this stream printed that its writer's end belongs to, "crash" or "device"
  // (a device error the job printed: "CUDA error: uncorrectable ECC error encountered"), or
  // nothing. A device line counts until a bar advances past it (the job went on after it);
  // a crash until it is caught or judged. The writer's (or wrapped command's) exit after it is
  // that failure's end, not a failure of its own.
  std::optional<std::string_view> PrintedFailure() const {
    if (crash_line_ != 0) {
      return "crash";
    }
    if (device_line_ != 0 && progress_.last_advance_line() <= device_line_) {
      return "device error";
    }
    return std::nullopt;
  }
  // The crash was caught (the job went on): a device error it printed still counts.
  void ForgetCrash() { crash_line_ = 0; }
  // The job is over: nothing it printed is what a later end belongs to.
  void ForgetFailures() {
    crash_line_ = 0;
    device_line_ = 0;
  }
  // When the device error PrintedFailure tells of was read.
  std::optional<SteadyTime> device_error_at() const {
    return device_line_ == 0 ? std::nullopt : std::optional<SteadyTime>(device_at_);
  }
  // The wrapped command's streams: it may be a launcher whose ranks share its output.
  void set_may_catch(bool may_catch) { may_catch_ = may_catch; }
  // The stream ends in an unfinished line that is a progress bar's refresh: the one trace a
  // writer killed mid-bar leaves (a bar closed normally ends its line).
  bool EndsMidBar() const;

  void set_fingerprint(source::Fingerprint fingerprint) { identity_.fingerprint = fingerprint; }
  void set_name(std::string name) { identity_.name = std::move(name); }
  const StreamIdentity& identity() const { return identity_; }
  detect::ProgressTracker& progress() { return progress_; }
  const detect::ProgressTracker& progress() const { return progress_; }
  std::uint64_t lines() const { return lines_; }
  std::uint64_t bytes() const { return bytes_; }
  std::uint64_t last_line() const { return last_line_; }
  SteadyTime last_output() const { return last_output_; }
  SteadyTime created() const { return created_; }  // when the daemon began to follow it

 private:
  struct Recent {
    std::uint64_t line;
    std::uint64_t offset;
    std::string text;
    detect::WallTime read;  // when it was read: when its writer wrote it, near enough
  };
  StreamDetector(StreamIdentity identity, std::unique_ptr<detect::LineDetector> detector,
                 std::size_t context_lines, bool track_progress, SteadyTime created);
  void ParseProgress(std::string_view record, char separator, std::uint64_t line, SteadyTime now);
  std::vector<std::string> ContextBefore(std::uint64_t line) const;
  std::optional<std::uint64_t> OffsetOf(std::uint64_t line) const;
  void Remember(const source::LineBatch& batch, std::uint64_t batch_offset, detect::WallTime wall);
  // When `line` was read (the batch under way's at `wall`); a line past the remembered ones
  // is an open traceback's, read no sooner than its hold.
  detect::WallTime ReadTimeOf(std::uint64_t line, detect::WallTime wall) const;
  void SwapRulesWhenIdle();
  // Where in the unfinished line the refreshes not yet parsed begin.
  std::size_t UnparsedFrom(std::string_view text, char separator) const;
  void Emit(std::vector<detect::Event>& events, detect::WallTime wall,
            std::vector<detect::Firing>& out);

  StreamIdentity identity_;
  std::unique_ptr<detect::LineDetector> detector_;
  std::optional<rules::LineMatcher> pending_matcher_;  // reloaded rules, once no traceback is open
  std::size_t context_lines_;
  bool track_progress_;
  detect::ProgressTracker progress_;
  // The last lines, oldest first; bounded. A vector, not a deque: an empty deque allocates
  // half a kilobyte, and a daemon watching 10,000 quiet files has 10,000 of them.
  std::vector<Recent> recent_;
  std::vector<detect::Event> events_;
  const source::LineBatch* batch_ = nullptr;  // during OnBatch
  std::uint64_t batch_offset_ = 0;
  std::vector<source::WriterProcess> writers_;
  std::vector<int> departed_;  // pids, oldest first
  bool live_ = false;
  bool writer_closed_ = false;
  std::uint64_t crash_line_ = 0;
  std::uint64_t device_line_ = 0;  // of the last device failure it printed (PrintedFailure)
  SteadyTime device_at_{};         // when it was read
  int crash_writer_ = 0;  // the one writer when the crash was reported (0: none or several)
  bool may_catch_ = true;
  bool saw_writer_tags_ = false;  // a line began with a rank tag: several ranks write here
  std::uint64_t suppress_through_ = 0;
  std::uint64_t pending_line_ = 0;  // the unfinished line OnPending saw last
  std::size_t pending_parsed_ = 0;  // how much of it was parsed
  std::optional<source::TailPosition> traceback_hold_;
  detect::WallTime traceback_hold_read_{};  // when the hold's line was read
  std::optional<source::TailPosition> incident_hold_;
  std::uint64_t lines_ = 0;
  std::uint64_t bytes_ = 0;
  std::uint64_t last_line_ = 0;
  SteadyTime created_{};
  SteadyTime last_output_{};
};

}  // namespace trainwatch::detect
