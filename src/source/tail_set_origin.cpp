// Where a file the globs newly match comes from, so that no line is read twice or lost: the
// same file as before a restart (its saved position), a rotated copy of a file being read
// (copytruncate: it continues where the original was left, also across a restart), a copy
// whose original is not truncated yet (parked until it is), or a new file. Split from
// tail_set.cpp; the same TailSet, loop thread only.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "source/rotated_name.h"
#include "source/tail_set.h"

namespace trainwatch::source {
namespace {

// Copies are recognised by their first bytes; fewer than this say too little.
constexpr std::uint32_t kMinCopyFingerprint = 16;
// How long a short new file that may be a copy in the making waits before it is read as a
// file of its own.
constexpr auto kCopyWait = std::chrono::seconds(2);
constexpr std::size_t kMaxRetired = 32;

}  // namespace

void TailSet::Follow(const std::string& path) {
  if (parked_.count(path) || excluded_.count(path)) {
    return;  // a copy of a live file; resolved when the original is truncated
  }
  const Result<FileStatus> info = env_.fs().Stat(path);
  if (!info || info->type != FileType::kRegular) {
    return;
  }
  const source::FileId id{info->device, info->inode};
  if (budget_ && budget_->exhausted()) {
    MarkUnwatched(path, BudgetSpent());
    if (!in_turn_.count(path) && !RenameTurn(path, id)) {
      FollowInTurn(path, InTurnStart(path, id));
    }
    return;
  }
  if (Promote(path, id)) {
    return;  // read in turn so far, followed from where its turns left it
  }
  const Result<std::unique_ptr<ReadableFile>> probe = env_.fs().OpenForReading(path);
  if (!probe) {
    MarkUnwatched(path, probe.error().message);
    return;
  }
  auto same = [&](const source::Fingerprint& fingerprint) {
    return source::ReadFingerprint(**probe, fingerprint.length) == fingerprint;
  };
  // A copy still being written (copytruncate copies with a read/write loop) can be shorter
  // than the fingerprint it will match: wait for it to grow, a little while.
  if (info->size < source::Fingerprint::kHeadBytes && MayBecomeACopy(path, info->size)) {
    const SteadyTime now = env_.SteadyNow();
    const SteadyTime since = deferred_.try_emplace(path, now).first->second;
    if (now - since < kCopyWait) {
      return;  // its growth (an inotify event) or the next rescan brings it back here
    }
  }
  deferred_.erase(path);
  // 1. The same file as before a restart.
  for (auto [it, end] = saved_by_id_.equal_range(id); it != end; ++it) {
    ++origin_checks_;
    if (!saved_used_[it->second] && same(saved_[it->second].fingerprint)) {
      saved_used_[it->second] = true;
      return Open(path, saved_[it->second].position);
    }
  }
  // 2. A copy of a file we were reading (copytruncate): continue where the original was.
  for (auto it = retired_.begin(); it != retired_.end(); ++it) {
    if (it->fingerprint.length >= kMinCopyFingerprint &&
        source::IsRotatedCopyName(path, it->dir, it->name) && same(it->fingerprint)) {
      const Retired retired = *it;
      retired_.erase(it);
      return OpenCopy(path, retired.id, retired.position, info->size);
    }
  }
  // The same across a restart: the original, saved before it, was truncated while the daemon
  // was down (it no longer holds its saved first bytes, and was or will be read as a new file).
  // An original that still holds them is not rotated yet: its copy waits, as in 3.
  for (const std::size_t index : SavedOriginalsOf(path)) {
    const source::SavedTail& saved = saved_[index];
    if (saved.fingerprint.length >= kMinCopyFingerprint && IsCopyNameOf(path, saved.path) &&
        same(saved.fingerprint)) {
      if (StillHolds(saved)) {
        parked_.insert(path);
        return;
      }
      saved_used_[index] = true;
      return OpenCopy(path, saved.id, saved.position, info->size);
    }
  }
  // 3. A copy of a file still being read, not yet truncated: read the original now, which
  //    notices a truncation that already happened; otherwise wait for it. A daemon behind its
  //    files may not have read a cut yet that the copy came after: the copy is then of what
  //    the original holds now, not of what it held when last read.
  for (const source::FileId& other_id : FollowedOriginalsOf(path)) {
    TailedFile* other = files_.at(other_id).get();
    if (!IsCopyNameOf(path, other->tail.path())) {
      continue;
    }
    const source::Fingerprint known = fingerprints_[other_id];
    const bool held_when_read = known.length >= kMinCopyFingerprint && same(known);
    // Its first bytes now, as many as the copy has (up to a fingerprint's): a file read in turn
    // is left to its next turn, which reads any cut, and the copy's rescan then follows.
    const auto length = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(info->size, source::Fingerprint::kHeadBytes));
    auto held_now = [&] {
      const std::optional<source::Fingerprint> head =
          other->tail.released() || length < kMinCopyFingerprint
              ? std::nullopt
              : other->tail.HeadFingerprint(length);
      return head && same(*head);
    };
    if (!held_when_read && !held_now()) {
      continue;
    }
    ReadFile(*other, kReadBudget);
    if (held_when_read && !retired_.empty() && retired_.back().fingerprint == known) {
      return Follow(path);
    }
    parked_.insert(path);
    return;
  }
  // 4. A new file: from its start, except files already there when the daemon first starts.
  std::optional<source::TailPosition> start = source::TailPosition{};
  if (!initial_scan_done_ && first_start_ && source_.start_at == config::StartAt::kEnd) {
    start.reset();
  }
  Open(path, start);
}

void TailSet::OpenCopy(const std::string& path, source::FileId original,
                       source::TailPosition position, std::uint64_t size) {
  if (position.offset > size) {
    // The writer wrote on between the copy and the truncation, and we read that from the
    // original: everything the copy holds was read already. Its end, not its start (which
    // FileTail takes a position past the end for: a file truncated while we were away).
    spdlog::info(
        "source {}: {} is a rotated copy, read to its end already (byte {} of the "
        "original; the copy has {})",
        source_.name, path, position.offset, size);
    position.offset = size;
  } else {
    spdlog::info("source {}: {} is a rotated copy; continuing at byte {}", source_.name, path,
                 position.offset);
  }
  Open(path, position, original);
}

bool TailSet::StillHolds(const source::SavedTail& saved) const {
  const Result<FileStatus> info = env_.fs().Stat(saved.path);
  if (!info || source::FileId{info->device, info->inode} != saved.id ||
      info->size < saved.position.offset) {
    return false;
  }
  const Result<std::unique_ptr<ReadableFile>> file = env_.fs().OpenForReading(saved.path);
  return file && source::ReadFingerprint(**file, saved.fingerprint.length) == saved.fingerprint;
}

bool TailSet::MayBecomeACopy(const std::string& path, std::uint64_t size) {
  auto longer = [&](const source::Fingerprint& fingerprint, const std::string& dir,
                    const std::string& stem) {
    return fingerprint.length >= kMinCopyFingerprint && fingerprint.length > size &&
           source::IsRotatedCopyName(path, dir, stem);
  };
  for (const Retired& retired : retired_) {
    if (longer(retired.fingerprint, retired.dir, retired.name)) {
      return true;
    }
  }
  for (const source::FileId& id : FollowedOriginalsOf(path)) {
    const TailedFile* file = files_.at(id).get();
    auto fingerprint = fingerprints_.find(id);
    if (fingerprint == fingerprints_.end()) {
      continue;
    }
    if (const auto [dir, name] = DirAndNameOf(file->tail.path());
        longer(fingerprint->second, dir, name)) {
      return true;
    }
  }
  return false;
}

void TailSet::Retire(TailedFile& file, source::Fingerprint old_fingerprint) {
  if (old_fingerprint.length < kMinCopyFingerprint) {
    return;
  }
  auto [dir, name] = DirAndNameOf(file.tail.path());
  retired_.push_back({file.tail.id(), old_fingerprint, file.tail.before_truncation(),
                      std::move(dir), std::move(name), env_.SteadyNow()});
  while (retired_.size() > kMaxRetired) {
    retired_.pop_front();
  }
  // A copy that showed up before the truncation was noticed can go now: matched by the next
  // rescan, once the read that found the cut is done and the original's fingerprint is what it
  // holds now (the name may be the next rotation's copy by then, of lines still to be read).
  bool unparked = false;
  for (auto it = parked_.begin(); it != parked_.end();) {
    if (source::IsRotatedCopyName(*it, retired_.back().dir, retired_.back().name)) {
      it = parked_.erase(it);
      unparked = true;
    } else {
      ++it;
    }
  }
  if (unparked) {
    ScheduleRescan();
  }
}

bool TailSet::IsCopyNameOf(const std::string& copy, const std::string& original) {
  const auto [dir, name] = DirAndNameOf(original);
  return source::IsRotatedCopyName(copy, dir, name);
}

TailSet::DirAndName TailSet::DirAndNameOf(const std::string& path) {
  const std::filesystem::path parts(path);
  return {parts.parent_path().string(), parts.filename().string()};
}

std::vector<source::FileId> TailSet::FollowedOriginalsOf(const std::string& path) {
  const auto [dir, copy_name] = DirAndNameOf(path);
  std::vector<source::FileId> originals;
  for (std::string& name : source::RotatedCopyOriginals(copy_name)) {
    for (auto [it, end] = by_name_.equal_range({dir, std::move(name)}); it != end; ++it) {
      ++origin_checks_;
      originals.push_back(it->second);
    }
  }
  std::sort(originals.begin(), originals.end());
  originals.erase(std::unique(originals.begin(), originals.end()), originals.end());
  return originals;
}

std::vector<std::size_t> TailSet::SavedOriginalsOf(const std::string& path) {
  const auto [dir, copy_name] = DirAndNameOf(path);
  std::vector<std::size_t> originals;
  for (std::string& name : source::RotatedCopyOriginals(copy_name)) {
    for (auto [it, end] = saved_by_name_.equal_range({dir, std::move(name)}); it != end; ++it) {
      ++origin_checks_;
      if (!saved_used_[it->second]) {
        originals.push_back(it->second);
      }
    }
  }
  std::sort(originals.begin(), originals.end());
  originals.erase(std::unique(originals.begin(), originals.end()), originals.end());
  return originals;
}

}  // namespace trainwatch::source
