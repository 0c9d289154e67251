// TailSet: the files of one configured source. Expands its globs (again on every directory
// change and every rescan_interval, so per-rank directories that appear later are found),
// watches their directories (inotify) or, on network file systems or when configured, polls
// each file, and reads what they append in bounded chunks. Everything it asks of the system —
// the file system, watches, timers, the clock — goes through the Env, so unit tests drive
// rotation one event at a time on a fake one.
// Rotation: a renamed file is finished from its open descriptor while the new one is read
// from its start; a truncated one (copytruncate) restarts at 0, and its copy, when the globs
// match it, continues where the original was left. Deleted files are finished, then closed.
// Resumes files from saved positions after a restart. Loop thread only.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/daemon_config.h"
#include "core/env.h"
#include "source/descriptor_budget.h"
#include "source/file_tail.h"
#include "source/line_batch.h"
#include "source/tail_state.h"

namespace trainwatch::source {

struct TailedFile {
  explicit TailedFile(source::FileTail t) : tail(std::move(t)) {}
  source::FileTail tail;
  DescriptorBudget::Lease descriptor;         // its share of the budget, while it is open
  std::unique_ptr<ChangeWatch> poll;          // when the file is polled rather than watched
  std::optional<SteadyTime> gone_since;       // no longer matched, renamed away or deleted
  std::optional<std::uint64_t> deleted_size;  // deleted: its size at the last tick
  // Where the path it was found at points, when that is a symlink: its writes are reported
  // by that name, in that directory.
  std::string target;
  bool queued = false;
  // Read to its end once, or new since the start: what comes now is written live.
  bool caught_up = false;
  // Past the descriptor budget: opened for its turn only (TailSet::TakeTurns).
  bool in_turn = false;
  // Rewritten in place (a rotated copy made over it): not read until matched again.
  bool rewritten = false;
};

class TailSet {
 public:
  // Bytes read from one file per turn: enough to keep up with a fast writer, small enough that
  // one busy file cannot hold the loop (and the other files) for long.
  static constexpr std::size_t kReadBudget = 1 << 20;
  // Files past the descriptor budget are read in turn: each second, up to this many of them
  // are opened, read (one read budget each) and closed again, round robin. A line written in
  // any of N such files is read within ceil(N / kTurnsPerSecond) seconds.
  static constexpr std::size_t kTurnsPerSecond = 64;
  // What the owner is told of each followed file (its detection state lives there, keyed by
  // the file's id).
  struct Hooks {
    // A file is followed from now on; false when its consumer cannot be made (logged there):
    // then it is not.
    std::function<bool(TailedFile& file)> on_open;
    // Lines read from a file.
    std::function<void(TailedFile& file, const source::LineBatch& batch, std::uint64_t offset)>
        on_batch;
    // After a read that left an unfinished last line (a tqdm bar without its '\n' yet).
    std::function<void(TailedFile& file)> on_pending;
    // Its path (a rename) or its fingerprint (a short file grew) changed.
    std::function<void(TailedFile& file)> on_changed;
    // It was truncated and is read from its start again.
    std::function<void(TailedFile& file)> on_truncated;
    // The last process writing the file closed it, or died (inotify's IN_CLOSE_WRITE); what it
    // wrote last has been read. Optional.
    std::function<void(TailedFile& file)> on_close_write;
    // A file is about to be closed: flush what its stream holds.
    std::function<void(TailedFile& file)> on_close;
    // Where a restart must resume it, given how far it has been read (never past lines whose
    // detection is not yet final).
    std::function<TailPosition(const TailedFile& file)> durable;
  };

  // `saved` are the positions of this source's files at the last stop; `first_start` says
  // there was no state at all (then `start_at` applies to existing files).
  TailSet(Env& env, config::SourceConfig source, config::WatchConfig watch, Hooks hooks,
          std::vector<source::SavedTail> saved, bool first_start);
  ~TailSet();
  TailSet(const TailSet&) = delete;
  TailSet& operator=(const TailSet&) = delete;

  // Logs are opened only within `budget` (shared by every source); before Start.
  void UseDescriptorBudget(std::shared_ptr<DescriptorBudget> budget) {
    budget_ = std::move(budget);
  }
  void Start();
  // Never follow `path` (the log `wrap` writes: its lines arrive through the pipe already).
  void Exclude(const std::string& path) { excluded_.insert(path); }
  // A reload changed the source's paths or watch settings.
  void Reconfigure(config::SourceConfig source, config::WatchConfig watch);
  // Called every tick; every rescan_interval reads what grew without an event (a missed or
  // overflowed inotify queue), and finishes and closes files gone for long enough.
  void Sweep(SteadyTime now);
  // Reads what `file` has now (its writer just exited: its last words first).
  void ReadNow(TailedFile& file) { ReadFile(file, kReadBudget); }
  // Positions to persist.
  void SaveTo(std::vector<source::SavedTail>& out) const;
  // Stops watching and closes every file (flushing their streams).
  void Close();

  const config::SourceConfig& source() const { return source_; }
  const std::map<source::FileId, std::unique_ptr<TailedFile>>& files() const { return files_; }
  std::map<source::FileId, std::unique_ptr<TailedFile>>& files() { return files_; }
  const std::set<std::string>& parked_copies() const { return parked_; }
  // Files the globs match that cannot be followed now, with why (the descriptor budget is
  // spent, permission denied...); each is tried again at every rescan.
  const std::map<std::string, std::string>& unwatched() const { return unwatched_; }
  // How many saved positions and followed files were looked at as a possible origin of a new
  // file (the same file before a restart, or the file it is a rotated copy of): the cost of
  // following N files must grow with N, not N squared.
  std::uint64_t origin_checks() const { return origin_checks_; }
  // How many files are read in turn now (past the descriptor budget; also in unwatched()).
  std::size_t in_turn() const { return in_turn_.size(); }

 private:
  static constexpr std::size_t kChunkBytes = 256 * 1024;  // each file's framing buffer grows by

  // A file that was truncated: a copy of its old content may show up (copytruncate), and
  // continues from where it was.
  struct Retired {
    source::FileId id;
    source::Fingerprint fingerprint;
    source::TailPosition position;
    std::string dir;
    std::string name;  // its file name then
    SteadyTime when;
  };

  void Rescan();
  void ScheduleRescan();
  void UpdateWatches(const std::set<std::string>& dirs);
  void OnDirEvent(const std::string& dir, std::string_view name, Env::DirEvent event);
  void Follow(const std::string& path);
  void Open(const std::string& path, std::optional<source::TailPosition> start,
            std::optional<source::FileId> copy_of = std::nullopt);
  // Makes an opened file (on_open said yes) a followed one, and reads it.
  void Adopt(const std::string& path, std::unique_ptr<TailedFile> file);
  // Past the descriptor budget (tail_set_in_turn.cpp): `path` is read in turn from `start`
  // (nullopt: its end, as Open takes it); each turn opens,
  // reads and closes it; once a descriptor is free, Promote makes it a followed file again.
  void FollowInTurn(const std::string& path, std::optional<source::TailPosition> start);
  // Where a file first met past the budget starts: its saved position (the same file before a
  // restart), else as a new file does. (Rotated copies are not matched to their originals
  // here: one read in turn is read from its start.)
  std::optional<source::TailPosition> InTurnStart(const std::string& path, source::FileId id);
  void TakeTurns(SteadyTime now);
  // The file of `id`, read in turn under another path (renamed), is read under `path` from
  // now on, where its turns left it; false when no file read in turn has that id.
  bool RenameTurn(const std::string& path, source::FileId id);
  bool Promote(const std::string& path, source::FileId id);
  // Flushes and closes a file read in turn (it is gone, replaced, or the set closes).
  void DropTurn(TailedFile& file);
  // The same for the file of `id`, if one is read in turn: before it is opened another way
  // (its detection state is keyed by its id, and one file has one).
  void DropTurnOf(source::FileId id);
  // Follows the copy of `original`, truncated, (`size` bytes) from where it was left.
  void OpenCopy(const std::string& path, source::FileId original, source::TailPosition position,
                std::uint64_t size);
  // Whether the file saved as `saved` is still at its path with its saved first bytes and at
  // least its saved length: not truncated while the daemon was down.
  bool StillHolds(const source::SavedTail& saved) const;
  bool UsePolling(const std::string& dir) const;
  bool IsDirectory(const std::string& path) const;
  // Whether a new file of `size` bytes could still turn out to be a copy of one we read.
  bool MayBecomeACopy(const std::string& path, std::uint64_t size);
  void StartPolling(TailedFile& file);
  // Records where `file`'s path points when it is a symlink (by_target_).
  void NoteLinkTarget(TailedFile& file);
  // Records that `path` cannot be followed, and why; ReportUnwatched logs what is new.
  void MarkUnwatched(const std::string& path, std::string why);
  std::string BudgetSpent() const;
  void ReportUnwatched();
  // Reads up to `budget` bytes; queues the file when there is more.
  void ReadFile(TailedFile& file, std::size_t budget);
  // The rotated copies rewritten in place (ReadFile) are closed and followed again as new files
  // would be; not from ReadFile itself, whose callers may be walking files_.
  void MatchRewrittenAgain();
  void Enqueue(TailedFile& file);
  void DrainQueue();
  void Retire(TailedFile& file, source::Fingerprint old_fingerprint);
  void CloseFile(source::FileId id);
  // Closes the deleted files read to their end that did not grow since the last tick.
  void CloseDeleted();
  // A (directory, file name) pair: how IsRotatedCopyName compares a copy with its original.
  using DirAndName = std::pair<std::string, std::string>;
  static DirAndName DirAndNameOf(const std::string& path);
  // Whether `copy` is named as a rotated copy of `original` (train.log.1 of train.log).
  static bool IsCopyNameOf(const std::string& copy, const std::string& original);
  // The followed files whose name `path` could be a rotated copy of, in FileId order; and
  // the saved positions, in their order. Looked up by name: comparing each new file with
  // every followed one made start-up quadratic.
  std::vector<source::FileId> FollowedOriginalsOf(const std::string& path);
  std::vector<std::size_t> SavedOriginalsOf(const std::string& path);
  // Keeps by_name_ in step with the followed files' paths.
  void Index(const TailedFile& file) {
    by_name_.emplace(DirAndNameOf(file.tail.path()), file.tail.id());
  }
  void Unindex(const TailedFile& file);

  Env& env_;
  config::SourceConfig source_;
  config::WatchConfig watch_;
  Hooks hooks_;
  // Positions saved at the last stop; an entry is used once (saved_used_), found by the file's
  // id or by the name of the file it could be a copy of.
  std::vector<source::SavedTail> saved_;
  std::vector<bool> saved_used_;
  std::multimap<source::FileId, std::size_t> saved_by_id_;
  std::multimap<DirAndName, std::size_t> saved_by_name_;
  bool first_start_;
  bool initial_scan_done_ = false;
  std::map<source::FileId, std::unique_ptr<TailedFile>> files_;
  std::map<std::string, source::FileId> by_path_;
  // Every followed file by the directory and name of its path (by_path_ holds only paths the
  // globs match now; a file renamed away is still followed under its old path).
  std::multimap<DirAndName, source::FileId> by_name_;
  std::map<std::string, std::unique_ptr<ChangeWatch>> watches_;  // by directory
  std::set<std::string> excluded_;
  std::set<std::string> parked_;  // copies of live files waiting for the original's truncation
  // Paths the globs match whose writer closed them (IN_CLOSE_WRITE) before they were followed.
  static constexpr std::size_t kClosedUnfollowedKept = 256;
  std::set<std::string> closed_unfollowed_;
  std::set<source::FileId> gone_;                    // the followed files with gone_since set
  std::map<std::string, source::FileId> by_target_;  // files reached through a symlink
  std::shared_ptr<DescriptorBudget> budget_;         // none: no limit of our own
  std::map<std::string, std::string> unwatched_;     // path -> why
  std::vector<std::string> newly_unwatched_;         // since the last report
  std::map<std::string, SteadyTime> deferred_;       // short new files that may be copies
  struct InTurn {
    std::unique_ptr<TailedFile> file;  // none until its first turn; its descriptor released
    std::optional<source::TailPosition> start;  // where its first turn starts
  };
  // The turn of the file `id`, or in_turn_.end().
  std::map<std::string, InTurn>::iterator TurnOf(source::FileId id);
  // Forgets the turn at `at` (its file, if any, already dropped or taken).
  void EraseTurn(std::map<std::string, InTurn>::iterator at);
  std::map<std::string, InTurn> in_turn_;  // by path
  // The path of each file read in turn that has had its first turn, by its id: a followed
  // file's open, a rename and a promotion find its turn without a walk over all of them.
  std::map<source::FileId, std::string> turn_paths_;
  std::deque<std::string> turn_order_;  // round robin
  SteadyTime last_turns_{};
  std::deque<Retired> retired_;
  std::deque<source::FileId> queue_;         // files with more to read
  std::unique_ptr<LoopTimer> rescan_timer_;  // periodic rescan
  std::unique_ptr<LoopTimer> rescan_soon_;   // debounced rescan after a directory event
  std::unique_ptr<LoopIdle> reader_;         // drains queue_ between loop iterations
  std::vector<source::FileId> rewritten_;    // rotated copies rewritten in place, to match again
  std::unique_ptr<LoopTimer> rewrite_soon_;  // MatchRewrittenAgain on the next loop turn
  std::map<source::FileId, source::Fingerprint> fingerprints_;  // last seen, per file
  SteadyTime last_sweep_{};
  bool closed_ = false;
  std::uint64_t origin_checks_ = 0;
};

}  // namespace trainwatch::source
