// IncidentLog: state_dir/incidents.jsonl, one JSON object per incident, appended, then one for
// its bundle and one when it resolves. Also read back at start: which lines of which files
// already fired (so lines re-read after a kill -9 do not fire again), when each rule last opened
// an incident (so the cooldown survives a restart) and which incidents are still open. Loop
// thread only.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/file_system.h"
#include "core/result.h"
#include "detect/incident.h"
#include "ops/attempt_ledger.h"
#include "ops/incident_lifecycle.h"
#include "ops/recurrence_book.h"
#include "ops/scheduler_action.h"

namespace trainwatch::capture {
struct CaptureOutcome;
}

namespace trainwatch::ops {

struct FiredThrough {
  std::uint32_t head_bytes = 0;
  std::uint64_t head_hash = 0;
  std::uint64_t line = 0;  // the last line of this file that is part of a written incident
};

struct IncidentHistory {
  // By "dev:ino"; several entries when the inode was reused (different fingerprints).
  std::multimap<std::string, FiredThrough> fired;
  std::map<std::string, detect::WallTime> rule_last_opened;
  std::map<std::string, FingerprintSeen> fingerprints;  // for the RecurrenceBook
  std::vector<AttemptEntry> attempts;                   // for the AttemptLedger, oldest first
  // Incidents with no resolution record, oldest first (a resolved one's rules are out of
  // rule_last_opened too: its cooldown ended with it).
  std::vector<OpenIncident> open;
  // By job id: when this node last opened an incident of that job that captured its ranks (a
  // crash, hang, device or peer incident): a peer's incident of the job soon after needs no
  // capture of its own here.
  std::map<std::string, detect::WallTime> job_last_captured;
  std::uint64_t incidents = 0;
};

// The history in `text`: whole JSONL lines of the log (an unfinished last line is ignored,
// as are lines that are not incidents). Never throws on any input. Pure; any thread.
IncidentHistory ParseIncidentHistory(std::string_view text);

// Each whole record of `text` (incidents.jsonl lines: incidents, bundles, resolutions...),
// in order; lines that are not JSON objects, and an unfinished last line, are skipped.
void ForEachRecord(std::string_view text,
                   const std::function<void(const nlohmann::ordered_json& record)>& visit);

// The resolution record, one line of JSON without its newline.
std::string ResolutionJson(const Resolution& resolution);

class IncidentLog {
 public:
  explicit IncidentLog(std::string path, const FileSystem& fs = RealFileSystem())
      : path_(std::move(path)), fs_(fs) {}
  Status Append(const detect::Incident& incident);
  // The incident's bundle, once written (or why there is none), as a record of its own:
  // {"bundle_for": id, "bundle": path, "bytes", "reduced", "error", "capture_seconds",
  //  "firing_to_bundle_seconds", "timed_out", "ranks" (where each group of ranks is),
  //  "suspects": [{rank, label, pid, host, reason}]}. Incident records are written at once, so
  // detection is not delayed by the capture.
  Status AppendBundle(const capture::CaptureOutcome& outcome);
  // An incident resolved: {"resolved": id, "how": "progress"|"restart"|"ack", "why", "at",
  // "at_ms", "open_seconds"}.
  Status AppendResolved(const Resolution& resolution);
  // A hang that joined incident `id` after it was recorded (incident/follow_ups.h):
  // {"follow_up_for": id, "rule", "kind", "source", "stream", "line", "summary", "rank",
  //  "time", "why"}.
  Status AppendFollowUp(const std::string& id, const detect::Firing& firing,
                        const std::string& why);
  // What was done about an incident in the scheduler (ops/scheduler_action.h).
  Status AppendSchedulerAction(const SchedulerAction& action);
  // Reads the last kTailBytes of the log (older incidents are past every cooldown and far
  // behind every saved offset).
  Result<IncidentHistory> ReadHistory() const;
  // Those bytes, from their first whole line: what ReadHistory parses, and what the commands
  // that read the log without a daemon (node-verdict, the Slurm Epilog) read. A log not written
  // yet is empty.
  Result<std::string> ReadTail() const;
  const std::string& path() const { return path_; }

  static constexpr std::size_t kTailBytes = 4 << 20;
  // The bound on the file: an append that takes it past kMaxBytes trims it to its last
  // kTailBytes (from a line start), all that ReadHistory reads anyway, through a temporary file
  // and a rename. So the file stays between 4 and 8 MiB, some 10,000 incidents.
  static constexpr std::size_t kMaxBytes = 2 * kTailBytes;
  static constexpr std::size_t kMaxUnwritten = 256;
  // Writes what a failing disk refused before (each append does this first). Nothing to write:
  // Ok.
  Status Flush();
  std::size_t unwritten() const { return unwritten_.size(); }
  std::uint64_t lost() const { return lost_; }

 private:
  Status AppendLine(const std::string& text);
  Status Unwritten(const std::string& why) const;
  Status Trim(const ReadableFile& file, std::uint64_t size);
  std::string path_;
  const FileSystem& fs_;
  // Records a full or failing disk refused, oldest first: written before the next one, so
  // that none is lost once the disk has room again (at most kMaxUnwritten: past it the oldest
  // go, and the first write that lands again logs how many).
  std::deque<std::string> unwritten_;
  std::uint64_t lost_ = 0;       // dropped from unwritten_ past kMaxUnwritten, since the start
  std::uint64_t lost_said_ = 0;  // of those, logged
};

}  // namespace trainwatch::ops
