#include "core/latest_file_writer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <utility>

namespace trainwatch {

LatestFileWriter::LatestFileWriter(Env& env, std::string path, unsigned mode, Done done)
    : env_(env), path_(std::move(path)), mode_(mode), done_(std::move(done)) {}

LatestFileWriter::~LatestFileWriter() { *alive_ = false; }

void LatestFileWriter::Write(std::string text) {
  if (shared_->abandoned) {
    return;
  }
  if (writing_) {
    next_ = std::move(text);  // replaces any text waiting: only the latest matters
    if (env_.SteadyNow() - launched_ >= kPoolLateAfter) {
      WriteWaitingHere();
    }
    return;
  }
  Launch(std::move(text));
}

void LatestFileWriter::WriteWaitingHere() {
  std::unique_lock lock(shared_->mutex, std::try_to_lock);
  if (!lock.owns_lock()) {
    return;  // the pool is writing it now (a slow disk): nothing to gain here
  }
  if (!said_late_) {
    said_late_ = true;
    spdlog::warn(
        "{}: the thread pool has not run its write for {} s (all its threads busy?): "
        "written on the loop until it does",
        path_, kPoolLateAfter.count());
  }
  shared_->written = ++generation_;  // the pool's, older, is skipped when it runs
  const Status written = env_.fs().ReplaceWhole(path_, *next_, mode_);
  next_.reset();
  if (done_) {
    done_(written);
  }
}

void LatestFileWriter::Launch(std::string text) {
  writing_ = true;
  launched_ = env_.SteadyNow();
  const std::uint64_t generation = ++generation_;
  auto outcome = std::make_shared<Status>(Status::Ok());
  const FileSystem* fs = &env_.fs();
  env_.RunOnPool(
      [shared = shared_, fs, path = path_, mode = mode_, text = std::move(text), generation,
       outcome] {
        const std::lock_guard lock(shared->mutex);
        if (generation > shared->written && !shared->abandoned) {
          *outcome = fs->ReplaceWhole(path, text, mode);
          shared->written = generation;
        }
      },
      [this, alive = alive_, outcome] {
        if (!*alive) {
          return;
        }
        writing_ = false;
        if (done_) {
          done_(*outcome);
        }
        if (next_) {
          std::string latest = std::move(*next_);
          next_.reset();
          Launch(std::move(latest));
        }
      });
}

Status LatestFileWriter::WriteNow(std::string_view text) {
  next_.reset();
  if (shared_->abandoned) {
    return Status::Ok();
  }
  const std::uint64_t generation = ++generation_;
  std::unique_lock lock(shared_->mutex, std::defer_lock);
  if (!lock.try_lock_for(kWaitForWrite)) {
    return Error{
        fmt::format("{}: an earlier write has not ended in {} s", path_, kWaitForWrite.count())};
  }
  shared_->written = generation;
  return env_.fs().ReplaceWhole(path_, text, mode_);
}

void LatestFileWriter::Abandon() {
  next_.reset();
  // A write under way still lands; none handed to the pool after it does.
  shared_->abandoned = true;
}

}  // namespace trainwatch
