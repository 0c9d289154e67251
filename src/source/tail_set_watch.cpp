// How a TailSet learns that its files changed: inotify on the directories its globs can match
// in (uv_fs_event), and polling (uv_fs_poll) of each file where inotify cannot see the writes —
// network file systems, overlayfs layers written from outside, or `watch.mode: poll`.
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <algorithm>

#include "source/glob.h"
#include "source/tail_set.h"

namespace trainwatch::source {
namespace {

// File systems whose changes inotify does not see (made on another host) are polled.
bool IsNetworkFileSystem(long type) {
  switch (static_cast<unsigned long>(type)) {
    case 0x6969:      // NFS
    case 0x517B:      // SMB
    case 0xFF534D42:  // CIFS
    case 0xFE534D42:  // SMB2
    case 0x65735546:  // FUSE (sshfs, s3fs, gcsfuse...)
    case 0x00C36400:  // Ceph
    case 0x0BD00BD0:  // Lustre
    case 0x01021997:  // 9p (WSL, Docker Desktop shares)
    case 0x5346414F:  // AFS
    case 0x01161970:  // GFS2
    case 0x47504653:  // GPFS
      return true;
    default:
      return false;
  }
}

}  // namespace

void TailSet::ScheduleRescan() {
  if (closed_ || uv_is_active(rescan_soon_.base())) {
    return;
  }
  // A burst of creations (eight ranks opening their logs) makes one rescan, soon after.
  uv_timer_start(
      rescan_soon_.get(),
      [](uv_timer_t* timer) {
        if (auto* self = static_cast<TailSet*>(timer->data)) {
          self->Rescan();
        }
      },
      10, 0);
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
  constexpr long kOverlayFs = 0x794c7630;
  struct statfs info {};
  return ::statfs(dir.c_str(), &info) == 0 &&
         (IsNetworkFileSystem(info.f_type) || info.f_type == kOverlayFs);
}

void TailSet::UpdateWatches(const std::set<std::string>& dirs) {
  for (auto it = watches_.begin(); it != watches_.end();) {
    it = dirs.count(it->first) ? std::next(it) : watches_.erase(it);
  }
  for (const std::string& dir : dirs) {
    if (watches_.count(dir)) {
      continue;
    }
    auto watch = std::make_unique<DirWatch>();
    watch->owner = this;
    watch->dir = dir;
    int status = 0;
    watch->handle = UvHandle<uv_fs_event_t>::Make(loop_, status, uv_fs_event_init);
    if (!watch->handle) {
      spdlog::warn("source {}: cannot watch {}: {}", source_.name, dir, uv_strerror(status));
      continue;
    }
    watch->handle->data = watch.get();
    status = uv_fs_event_start(
        watch->handle.get(),
        [](uv_fs_event_t* handle, const char* name, int events, int result) {
          auto* watched = static_cast<DirWatch*>(handle->data);
          if (watched != nullptr && result == 0) {
            watched->owner->OnDirEvent(*watched, name, events);
          }
        },
        dir.c_str(), 0);
    if (status != 0) {
      // Out of inotify watches, or a file system without it: the tick's sweep and the
      // periodic rescan still find everything, only later.
      spdlog::warn("source {}: cannot watch {} ({}); polling it every {} ms", source_.name, dir,
                   uv_strerror(status), watch_.rescan_interval.count());
      continue;
    }
    watches_.emplace(dir, std::move(watch));
  }
}

void TailSet::OnDirEvent(DirWatch& watch, const char* name, int events) {
  if (name == nullptr) {
    ScheduleRescan();
    return;
  }
  const std::string path = watch.dir + "/" + name;
  auto known = by_path_.find(path);
  if (known != by_path_.end()) {
    auto file = files_.find(known->second);
    if (file != files_.end()) {
      ReadFile(*file->second, kReadBudget);
    }
  }
  if (known != by_path_.end()) {
    if ((events & UV_RENAME) != 0) {
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
  struct stat info {};
  const bool new_directory =
      (events & UV_RENAME) != 0 && ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
  if ((may_match && !parked_.count(path)) || new_directory ||
      (may_match && (events & UV_RENAME) != 0)) {
    ScheduleRescan();
  }
}

void TailSet::StartPolling(TailedFile& file) {
  int status = 0;
  file.poll = UvHandle<uv_fs_poll_t>::Make(loop_, status, uv_fs_poll_init);
  if (!file.poll) {
    return;
  }
  file.owner = this;
  file.poll->data = &file;
  uv_fs_poll_start(
      file.poll.get(),
      [](uv_fs_poll_t* handle, int result, const uv_stat_t*, const uv_stat_t*) {
        auto* polled = static_cast<TailedFile*>(handle->data);
        if (polled == nullptr) {
          return;
        }
        TailSet* self = polled->owner;
        if (result < 0) {
          self->ScheduleRescan();  // gone or renamed
          return;
        }
        self->ReadFile(*polled, kReadBudget);
      },
      file.tail.path().c_str(), static_cast<unsigned>(watch_.poll_interval.count()));
}

}  // namespace trainwatch::source
