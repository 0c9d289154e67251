// Files past the descriptor budget, read in turn: the daemon holds one descriptor per followed
// file, and a node with more logs than its open-file limit allows must still see a crash line
// in any of them. Each second up to kTurnsPerSecond of them are opened, read to their end (one
// read budget each) and closed again, round robin; their detection state (the stream, the
// unfinished last line, the line numbers) stays between turns. Once a descriptor is free (a
// followed file closed), the next rescan makes one a followed file again, from where its turns
// left it. They stay listed as not watched, saying they are read in turn.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "source/tail_set.h"

namespace trainwatch::source {

std::optional<source::TailPosition> TailSet::InTurnStart(const std::string& path,
                                                         source::FileId id) {
  const Result<std::unique_ptr<ReadableFile>> probe = env_.fs().OpenForReading(path);
  if (probe) {
    for (auto [it, end] = saved_by_id_.equal_range(id); it != end; ++it) {
      const source::SavedTail& saved = saved_[it->second];
      if (!saved_used_[it->second] &&
          source::ReadFingerprint(**probe, saved.fingerprint.length) == saved.fingerprint) {
        saved_used_[it->second] = true;
        return saved.position;
      }
    }
  }
  if (!initial_scan_done_ && first_start_ && source_.start_at == config::StartAt::kEnd) {
    // There before the daemon's first start: from its end as it is now, not as it is at its
    // first turn (what is written in between is read).
    const Result<FileStatus> info = env_.fs().Stat(path);
    return source::TailPosition{info ? info->size : 0, 1};
  }
  return source::TailPosition{};
}

void TailSet::FollowInTurn(const std::string& path, std::optional<source::TailPosition> start) {
  auto [it, added] = in_turn_.try_emplace(path);
  if (added) {
    it->second.start = start;
    turn_order_.push_back(path);
  }
}

void TailSet::TakeTurns(SteadyTime now) {
  if (turn_order_.empty() || now - last_turns_ < std::chrono::seconds(1)) {
    return;
  }
  last_turns_ = now;
  for (std::size_t turns = std::min(kTurnsPerSecond, turn_order_.size()); turns > 0; --turns) {
    const std::string path = turn_order_.front();
    turn_order_.pop_front();
    auto found = in_turn_.find(path);
    if (found == in_turn_.end()) {
      continue;
    }
    InTurn& turn = found->second;
    if (!unwatched_.count(path)) {
      // Followed for good now, or no longer matched by the globs.
      if (turn.file) {
        DropTurn(*turn.file);
      }
      EraseTurn(found);
      continue;
    }
    if (!turn.file) {
      Result<source::FileTail> tail =
          source::FileTail::Open(env_.fs(), path, turn.start, kChunkBytes);
      if (!tail) {
        turn_order_.push_back(path);  // gone for now: the rescan drops it, or it comes back
        continue;
      }
      auto file = std::make_unique<TailedFile>(std::move(*tail));
      file->in_turn = true;
      file->caught_up = initial_scan_done_;
      if (!hooks_.on_open(*file)) {
        in_turn_.erase(found);
        continue;
      }
      spdlog::info("source {}: reading {} in turn (past the descriptor budget) from byte {}",
                   source_.name, path, file->tail.read_offset());
      turn_paths_[file->tail.id()] = path;
      turn.file = std::move(file);
    } else if (Status reopened = turn.file->tail.Reopen(env_.fs()); !reopened.ok()) {
      // Renamed away, deleted or replaced: what it held to its end was read at its last turn.
      spdlog::info("source {}: {}; its turns end", source_.name, reopened.error().message);
      DropTurn(*turn.file);
      EraseTurn(found);
      continue;  // a new file at the path is met again by the next rescan
    }
    ReadFile(*turn.file, kReadBudget);
    turn.file->tail.Release();
    turn.file->tail.Idle();
    turn_order_.push_back(path);
  }
}

std::map<std::string, TailSet::InTurn>::iterator TailSet::TurnOf(source::FileId id) {
  const auto path = turn_paths_.find(id);
  return path == turn_paths_.end() ? in_turn_.end() : in_turn_.find(path->second);
}

void TailSet::EraseTurn(std::map<std::string, InTurn>::iterator at) {
  if (at->second.file) {  // only a turn that had its first has its id known
    // Unless the id now names another path's turn (two links to one file).
    if (const auto path = turn_paths_.find(at->second.file->tail.id());
        path != turn_paths_.end() && path->second == at->first) {
      turn_paths_.erase(path);
    }
  }
  in_turn_.erase(at);
}

bool TailSet::RenameTurn(const std::string& path, source::FileId id) {
  const auto found = TurnOf(id);
  if (found == in_turn_.end()) {
    return false;
  }
  const std::string old_path = found->first;
  InTurn turn = std::move(found->second);
  in_turn_.erase(found);
  turn.file->tail.set_path(path);
  turn_paths_[id] = path;
  in_turn_.emplace(path, std::move(turn));
  std::replace(turn_order_.begin(), turn_order_.end(), old_path, path);
  spdlog::info("source {}: {} (read in turn) is {} now", source_.name, old_path, path);
  return true;
}

bool TailSet::Promote(const std::string& path, source::FileId id) {
  // By its path, or by its id under another path (renamed while read in turn).
  const auto found = TurnOf(id);
  if (found == in_turn_.end()) {
    return false;
  }
  DescriptorBudget::Lease descriptor;
  if (budget_ && !budget_->Take(descriptor)) {
    return false;
  }
  turn_paths_.erase(id);
  std::unique_ptr<TailedFile> file = std::move(found->second.file);
  in_turn_.erase(found);
  if (Status reopened = file->tail.Reopen(env_.fs()); !reopened.ok()) {
    DropTurn(*file);
    return false;
  }
  file->in_turn = false;
  file->descriptor = std::move(descriptor);
  file->tail.set_path(path);
  unwatched_.erase(path);
  spdlog::info("source {}: {} is followed now, no longer in turn", source_.name, path);
  Adopt(path, std::move(file));
  return true;
}

void TailSet::DropTurnOf(source::FileId id) {
  if (const auto found = TurnOf(id); found != in_turn_.end()) {
    DropTurn(*found->second.file);
    EraseTurn(found);
  }
}

void TailSet::DropTurn(TailedFile& file) {
  file.tail.Flush([&](const source::LineBatch& batch, std::uint64_t offset) {
    hooks_.on_batch(file, batch, offset);
  });
  hooks_.on_close(file);
  fingerprints_.erase(file.tail.id());
}

}  // namespace trainwatch::source
