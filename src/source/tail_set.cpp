#include "source/tail_set.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "source/glob.h"
#include "source/rotated_name.h"

namespace trainwatch::source {
namespace {

constexpr auto kRetiredFor = std::chrono::minutes(2);
// A file gone from the globs is read for this long, then closed: a writer may still be
// writing to the renamed file until it reopens its log.
constexpr auto kMinGoneGrace = std::chrono::seconds(10);

std::string DirOf(const std::string& path) {
  return std::filesystem::path(path).parent_path().string();
}

}  // namespace

TailSet::TailSet(Env& env, config::SourceConfig source, config::WatchConfig watch, Hooks hooks,
                 std::vector<source::SavedTail> saved, bool first_start)
    : env_(env),
      source_(std::move(source)),
      watch_(watch),
      hooks_(std::move(hooks)),
      saved_(std::move(saved)),
      first_start_(first_start),
      rescan_timer_(env.NewTimer([this] { Rescan(); })),
      rescan_soon_(env.NewTimer([this] { Rescan(); })),
      reader_(env.NewIdle([this] { DrainQueue(); })),
      rewrite_soon_(env.NewTimer([this] { MatchRewrittenAgain(); })) {
  saved_used_.assign(saved_.size(), false);
  for (std::size_t index = 0; index < saved_.size(); ++index) {
    saved_by_id_.emplace(saved_[index].id, index);
    saved_by_name_.emplace(DirAndNameOf(saved_[index].path), index);
  }
}

TailSet::~TailSet() { Close(); }

void TailSet::Start() {
  Rescan();
  initial_scan_done_ = true;
  rescan_timer_->Start(watch_.rescan_interval, watch_.rescan_interval);
}

void TailSet::Reconfigure(config::SourceConfig source, config::WatchConfig watch) {
  source_ = std::move(source);
  watch_ = watch;
  rescan_timer_->Stop();
  Start();
}

void TailSet::Rescan() {
  if (closed_) {
    return;
  }
  std::set<std::string> matched;
  std::set<std::string> dirs;
  for (const std::string& pattern : source_.paths) {
    for (std::string& path : source::ExpandGlob(pattern, env_.fs())) {
      matched.insert(std::move(path));
    }
    for (std::string& dir : source::GlobWatchDirs(pattern, env_.fs())) {
      dirs.insert(std::move(dir));
    }
  }
  for (const auto& [target, id] : by_target_) {
    dirs.insert(DirOf(target));  // a link's target reports its writes in its own directory
  }
  if (watch_.mode != config::WatchMode::kPoll) {
    UpdateWatches(dirs);
  }
  // Which files are still where the globs say.
  std::set<source::FileId> present;
  for (const std::string& path : matched) {
    const Result<FileStatus> info = env_.fs().Stat(path);
    if (!info) {
      continue;
    }
    const source::FileId id{info->device, info->inode};
    auto known = files_.find(id);
    if (known != files_.end()) {
      present.insert(id);
      TailedFile& file = *known->second;
      if (file.tail.path() != path && by_path_.count(file.tail.path()) &&
          by_path_[file.tail.path()] == id) {
        by_path_.erase(file.tail.path());
      }
      if (file.tail.path() != path) {
        Unindex(file);
        file.tail.set_path(path);
        Index(file);
        hooks_.on_changed(file);
      }
      by_path_[path] = id;
      file.gone_since.reset();
      gone_.erase(id);
      continue;
    }
    Follow(path);
    if (files_.count(id)) {
      present.insert(id);
    }
  }
  const SteadyTime now = env_.SteadyNow();
  for (auto& [id, file] : files_) {
    if (!present.count(id) && !file->gone_since) {
      file->gone_since = now;
      gone_.insert(id);
      ReadFile(*file, kReadBudget);  // finish what it has now; Sweep reads the rest
    }
  }
  for (auto it = by_path_.begin(); it != by_path_.end();) {
    it = matched.count(it->first) ? std::next(it) : by_path_.erase(it);
  }
  for (auto it = unwatched_.begin(); it != unwatched_.end();) {
    it = matched.count(it->first) ? std::next(it) : unwatched_.erase(it);
  }
  ReportUnwatched();
  for (auto it = parked_.begin(); it != parked_.end();) {
    it = matched.count(*it) ? std::next(it) : parked_.erase(it);
  }
  for (auto it = deferred_.begin(); it != deferred_.end();) {
    it = matched.count(it->first) ? std::next(it) : deferred_.erase(it);
  }
  if (!deferred_.empty()) {
    ScheduleRescan();  // until they grow or their wait is over
  }
}

void TailSet::Open(const std::string& path, std::optional<source::TailPosition> start,
                   std::optional<source::FileId> copy_of) {
  DescriptorBudget::Lease descriptor;
  if (budget_ && !budget_->Take(descriptor)) {
    MarkUnwatched(path, BudgetSpent());
    FollowInTurn(path, start);
    return;
  }
  Result<source::FileTail> tail = source::FileTail::Open(env_.fs(), path, start, kChunkBytes);
  if (!tail) {
    MarkUnwatched(path, tail.error().message);
    return;
  }
  if (unwatched_.erase(path) > 0) {
    spdlog::info("source {}: {} can be watched now", source_.name, path);
  }
  if (copy_of) {
    tail->set_copy_of(*copy_of);
  }
  // Named as a rotated copy (of a file followed now, or one it continues): rewritten in place
  // later, it is matched again rather than read from its start (ReadFile).
  tail->set_stop_at_rewrite(copy_of.has_value() || !FollowedOriginalsOf(path).empty());
  auto file = std::make_unique<TailedFile>(std::move(*tail));
  file->descriptor = std::move(descriptor);
  DropTurnOf(file->tail.id());
  if (!hooks_.on_open(*file)) {
    return;
  }
  Adopt(path, std::move(file));
}

void TailSet::Adopt(const std::string& path, std::unique_ptr<TailedFile> file) {
  const source::FileId id = file->tail.id();
  fingerprints_[id] = file->tail.fingerprint();
  spdlog::info("source {}: following {} from byte {}", source_.name, path,
               file->tail.read_offset());
  TailedFile& opened = *file;
  // A file that appears while the source is watched is being written now: its first lines are
  // live too (a job that prints one line and hangs must still be seen to fall silent). Files
  // found at the start hold a backlog until read to their end.
  opened.caught_up = initial_scan_done_;
  if (auto replaced = files_.find(id); replaced != files_.end()) {
    Unindex(*replaced->second);
  }
  files_[id] = std::move(file);
  Index(opened);
  by_path_[path] = id;
  NoteLinkTarget(opened);
  if (UsePolling(DirOf(path))) {
    StartPolling(opened);
  }
  ReadFile(opened, kReadBudget);
  if (closed_unfollowed_.erase(path) > 0 && hooks_.on_close_write) {
    if (auto still = files_.find(id); still != files_.end()) {  // a read may have closed it
      hooks_.on_close_write(*still->second);
    }
  }
}

void TailSet::Enqueue(TailedFile& file) {
  if (file.queued) {
    return;
  }
  file.queued = true;
  queue_.push_back(file.tail.id());
  if (!reader_->active()) {
    reader_->Start();
  }
}

void TailSet::DrainQueue() {
  // One turn per queued file, then back to the loop: other sources and signals get a say.
  std::size_t turns = queue_.size();
  while (turns-- > 0 && !queue_.empty()) {
    const source::FileId id = queue_.front();
    queue_.pop_front();
    auto found = files_.find(id);
    if (found == files_.end()) {
      continue;
    }
    found->second->queued = false;
    ReadFile(*found->second, kReadBudget);
  }
  if (queue_.empty()) {
    reader_->Stop();
  }
}

void TailSet::MatchRewrittenAgain() {
  std::vector<source::FileId> rewritten;
  rewritten.swap(rewritten_);
  for (const source::FileId& id : rewritten) {
    auto found = files_.find(id);
    if (found == files_.end() || !found->second->rewritten) {
      continue;
    }
    const std::string path = found->second->tail.path();
    CloseFile(id);
    Follow(path);
  }
}

void TailSet::ReadFile(TailedFile& file, std::size_t budget) {
  if (file.rewritten) {
    return;  // matched again on the next turn of the loop (MatchRewrittenAgain)
  }
  if (file.queued || file.tail.released()) {
    return;  // its turn comes from the queue, in order (or, past the budget, in TakeTurns)
  }
  const source::Fingerprint before = fingerprints_[file.tail.id()];
  const source::FileTail::ReadOutcome outcome =
      file.tail.Read(budget, [&](const source::LineBatch& batch, std::uint64_t offset) {
        hooks_.on_batch(file, batch, offset);
      });
  if (!outcome.error.empty()) {
    spdlog::warn("source {}: reading failed: {}", source_.name, outcome.error);
  }
  if (outcome.stopped) {
    // A rotated copy rewritten in place (logrotate's next copytruncate over train.log.1): its
    // new content is a copy of what the original held, read there already. It is matched as a
    // new file would be (continued where the original was, or held until the original is cut)
    // on the next turn of the loop: the callers of ReadFile may be walking the files now.
    spdlog::info("source {}: {} was rewritten in place at byte {}: matched again as a rotated copy",
                 source_.name, file.tail.path(), file.tail.before_truncation().offset);
    file.rewritten = true;
    rewritten_.push_back(file.tail.id());
    rewrite_soon_->Start(std::chrono::milliseconds(0), {});
    return;
  }
  if (outcome.truncated) {
    spdlog::info("source {}: {} was truncated at byte {}; reading it from the start", source_.name,
                 file.tail.path(), file.tail.before_truncation().offset);
    hooks_.on_truncated(file);
    Retire(file, before);
  }
  const source::Fingerprint now = file.tail.fingerprint();
  if (!(now == before)) {
    fingerprints_[file.tail.id()] = now;
    hooks_.on_changed(file);
  }
  if (outcome.bytes > 0 && !file.tail.pending().empty()) {
    hooks_.on_pending(file);
  }
  if (outcome.more) {
    if (!file.in_turn) {  // one read budget a turn: the rest at its next turn
      Enqueue(file);
    }
  } else {
    file.caught_up = true;
    if (outcome.bytes == 0) {
      file.tail.Idle();
    }
  }
}

void TailSet::Sweep(SteadyTime now) {
  // Inotify reports growth as it happens; this is the safety net for what it misses (a full
  // event queue, a file renamed out of the watched directories), cheap enough at the rescan
  // pace and too costly for an idle daemon each second.
  CloseDeleted();
  TakeTurns(now);
  if (now - last_sweep_ < watch_.rescan_interval) {
    return;
  }
  last_sweep_ = now;
  while (!retired_.empty() && now - retired_.front().when > kRetiredFor) {
    retired_.pop_front();
  }
  const auto grace = std::max<std::chrono::milliseconds>(kMinGoneGrace, 2 * watch_.rescan_interval);
  std::vector<source::FileId> finished;
  for (auto& [id, file] : files_) {
    if (const Result<FileStatus> info = file->tail.Status(); info) {
      if (info->size != file->tail.read_offset()) {
        ReadFile(*file, kReadBudget);
      }
      if (info->links == 0 && !file->gone_since) {
        file->gone_since = now;  // deleted
        gone_.insert(id);
      }
    }
    if (file->gone_since && now - *file->gone_since >= grace && !file->queued) {
      finished.push_back(id);
    }
  }
  for (const source::FileId& id : finished) {
    CloseFile(id);
  }
}

void TailSet::CloseDeleted() {
  // A deleted file is read to its end and closed once it stopped growing: churn of short
  // files (created, written, deleted) must not pile up descriptors and page cache for the
  // whole grace a renamed file gets. A writer that still holds it and writes after a quiet
  // second finds nobody reading: nobody else could read that file either.
  std::vector<source::FileId> finished;
  for (const source::FileId& id : gone_) {
    TailedFile& file = *files_.at(id);
    const Result<FileStatus> info = file.tail.Status();
    if (!info || info->links > 0) {
      continue;  // renamed away: a writer may go on in it until it reopens its log
    }
    if (info->size != file.tail.read_offset() || file.queued) {
      ReadFile(file, kReadBudget);
      file.deleted_size.reset();
    } else if (file.deleted_size == info->size) {
      finished.push_back(id);  // read to its end, and unchanged for a tick
    } else {
      file.deleted_size = info->size;
    }
  }
  for (const source::FileId& id : finished) {
    CloseFile(id);
  }
}

void TailSet::CloseFile(source::FileId id) {
  auto found = files_.find(id);
  if (found == files_.end()) {
    return;
  }
  TailedFile& file = *found->second;
  file.tail.Flush([&](const source::LineBatch& batch, std::uint64_t offset) {
    hooks_.on_batch(file, batch, offset);
  });
  hooks_.on_close(file);
  spdlog::info("source {}: closed {}", source_.name, file.tail.path());
  auto path = by_path_.find(file.tail.path());
  if (path != by_path_.end() && path->second == id) {
    by_path_.erase(path);
  }
  fingerprints_.erase(id);
  gone_.erase(id);
  if (auto target = by_target_.find(file.target);
      target != by_target_.end() && target->second == id) {
    by_target_.erase(target);
  }
  Unindex(file);
  files_.erase(found);
  if (!unwatched_.empty()) {
    ScheduleRescan();  // its descriptor may be what a waiting file needs
  }
}

void TailSet::NoteLinkTarget(TailedFile& file) {
  const Result<FileStatus> link = env_.fs().Stat(file.tail.path(), /*follow=*/false);
  if (!link || link->type != FileType::kSymlink) {
    return;
  }
  Result<std::string> target = env_.fs().ResolvePath(file.tail.path());
  if (!target) {
    return;
  }
  file.target = std::move(*target);
  by_target_[file.target] = file.tail.id();
  if (!watches_.count(DirOf(file.target))) {
    ScheduleRescan();  // which watches its directory
  }
}

void TailSet::Unindex(const TailedFile& file) {
  for (auto [it, end] = by_name_.equal_range(DirAndNameOf(file.tail.path())); it != end; ++it) {
    if (it->second == file.tail.id()) {
      by_name_.erase(it);
      return;
    }
  }
}

void TailSet::SaveTo(std::vector<source::SavedTail>& out) const {
  for (const auto& [id, file] : files_) {
    source::SavedTail saved;
    saved.source = source_.name;
    saved.path = file->tail.path();
    saved.id = id;
    saved.position = hooks_.durable(*file);
    // The fingerprint must cover only bytes that will still be there: the first bytes of
    // the file, which a resumed read does not change.
    saved.fingerprint = file->tail.fingerprint();
    out.push_back(std::move(saved));
  }
  for (const auto& [path, turn] : in_turn_) {
    if (turn.file) {
      out.push_back({source_.name, path, turn.file->tail.id(), turn.file->tail.fingerprint(),
                     hooks_.durable(*turn.file)});
    }
  }
  // Files truncated in the last minutes whose copy has not been found yet (copytruncate):
  // where they were left, so that a restart in between (a kill -9 right after a rotation)
  // still continues in the copy instead of reading it again from its start.
  for (const Retired& retired : retired_) {
    out.push_back({source_.name, (std::filesystem::path(retired.dir) / retired.name).string(),
                   retired.id, retired.fingerprint, retired.position});
  }
  // Files not seen since the restart keep their entries, so a file that is briefly missing
  // (a remounted volume) still resumes; but not one whose inode is followed now under other
  // content (a truncated original's old entry, kept above while it mattered).
  for (std::size_t index = 0; index < saved_.size(); ++index) {
    if (!saved_used_[index] && !files_.count(saved_[index].id)) {
      out.push_back(saved_[index]);
    }
  }
}

void TailSet::Close() {
  if (closed_) {
    return;
  }
  closed_ = true;
  in_turn_.clear();  // as the followed files below: no flush, read again by the next start
  turn_paths_.clear();
  turn_order_.clear();
  watches_.clear();
  // No flush: an unfinished last line is read again, whole, by the next start.
  files_.clear();
  by_path_.clear();
  by_name_.clear();
  queue_.clear();
  rescan_timer_.reset();
  rescan_soon_.reset();
  reader_.reset();
  rewrite_soon_.reset();
}

}  // namespace trainwatch::source
