// How a TailSet learns that its files changed: a watch on each directory its globs can match
// in (inotify), and polling of each file where inotify cannot see the writes — network file
// systems, overlayfs layers written from outside, or `watch.mode: poll`. Both come from the
// Env and end in the same two places: ReadFile for a followed file, a rescan for the rest.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "source/glob.h"
#include "source/tail_set.h"

namespace trainwatch::source {

void TailSet::ScheduleRescan() {
  if (closed_ || rescan_soon_->active()) {
    return;
  }
  // A burst of creations (eight ranks opening their logs) makes one rescan, soon after.
  rescan_soon_->Start(std::chrono::milliseconds(10), {});
}

bool TailSet::UsePolling(const std::string& dir) const {
  if (watch_.mode == config::WatchMode::kPoll) {
    return true;
  }
  if (watch_.mode == config::WatchMode::kInotify) {
    return false;
  }
  // On overlayfs inotify sees writes made through this mount, not those made to its layers
  // from outside (the host writing into a container's upper directory): poll as well.
  const Result<FileSystemKind> kind = env_.fs().KindOf(dir);
  return kind && *kind != FileSystemKind::kLocal;
}

void TailSet::UpdateWatches(const std::set<std::string>& dirs) {
  for (auto it = watches_.begin(); it != watches_.end();) {
    it = dirs.count(it->first) ? std::next(it) : watches_.erase(it);
  }
  for (const std::string& dir : dirs) {
    if (watches_.count(dir)) {
      continue;
    }
    Result<std::unique_ptr<ChangeWatch>> watch = env_.WatchDirectory(
        dir,
        [this, dir](std::string_view name, Env::DirEvent event) { OnDirEvent(dir, name, event); });
    if (!watch) {
      // Out of inotify watches, or a file system without it: the tick's sweep and the
      // periodic rescan still find everything, only later.
      spdlog::warn("source {}: cannot watch {} ({}); polling it every {} ms", source_.name, dir,
                   watch.error().message, watch_.rescan_interval.count());
      continue;
    }
    watches_.emplace(dir, std::move(*watch));
  }
}

void TailSet::OnDirEvent(const std::string& dir, std::string_view name, Env::DirEvent event) {
  const bool renamed = event == Env::DirEvent::kRename;
  if (name.empty()) {
    ScheduleRescan();
    return;
  }
  // "/" + "runs" must be "/runs": the globs compare paths as text.
  const std::string path = (dir.back() == '/' ? dir : dir + "/") + std::string(name);
  std::optional<source::FileId> known;
  if (auto named = by_path_.find(path); named != by_path_.end()) {
    known = named->second;
  } else if (auto target = by_target_.find(path); target != by_target_.end()) {
    known = target->second;  // the target of a followed symlink
  }
  if (known) {
    auto file = files_.find(*known);
    if (file != files_.end()) {
      ReadFile(*file->second, kReadBudget);
      file = files_.find(*known);  // a read may have closed it
      if (file != files_.end() && event == Env::DirEvent::kCloseWrite && hooks_.on_close_write) {
        hooks_.on_close_write(*file->second);  // its last words are read: judge its writer
      }
    }
    if (renamed) {
      ScheduleRescan();  // a followed file renamed or deleted: rotation
    }
    return;
  }
  // A name we do not follow: it matters if the globs could match it (created, renamed into
  // place, or one that failed to open) or if it is a new directory that may hold matches.
  // Anything else (a checkpoint written next to the logs) must not cost a rescan per write.
  const bool may_match =
      std::any_of(source_.paths.begin(), source_.paths.end(),
                  [&](const std::string& p) { return source::GlobMatches(p, path); });
  if (event == Env::DirEvent::kCloseWrite) {
    // Its writer closed it before a rescan followed it (a job that lived a second on a busy
    // machine): once followed and read, it is judged as if the close came then.
    if (may_match) {
      if (closed_unfollowed_.size() >= kClosedUnfollowedKept) {
        closed_unfollowed_.clear();  // bounded; a lost one waits for a write to be judged
      }
      closed_unfollowed_.insert(path);
    }
    return;  // otherwise a close adds nothing a write did not already announce
  }
  if ((may_match && (!parked_.count(path) || renamed)) || (renamed && IsDirectory(path))) {
    ScheduleRescan();
  }
}

bool TailSet::IsDirectory(const std::string& path) const {
  const Result<FileStatus> info = env_.fs().Stat(path);
  return info && info->type == FileType::kDirectory;
}

void TailSet::StartPolling(TailedFile& file) {
  TailedFile* polled = &file;
  Result<std::unique_ptr<ChangeWatch>> poll =
      env_.PollFile(file.tail.path(), watch_.poll_interval, [this, polled](bool gone) {
        if (gone) {
          ScheduleRescan();  // renamed or deleted
          return;
        }
        ReadFile(*polled, kReadBudget);
      });
  if (poll) {
    file.poll = std::move(*poll);
  }
}

}  // namespace trainwatch::source
