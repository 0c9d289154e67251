// LatestFileWriter: keeps one file replaced whole (FileSystem::ReplaceWhole) with the latest
// text asked for, without the loop waiting on the disk. A rename over a file on ext4 starts
// the writeback of the new one (auto_da_alloc), and with the disk saturated by a job's
// checkpoint that can take long enough to hold `trainwatch status` past its 100 ms. One write
// at a time runs on the thread pool; text asked for meanwhile waits, and only the latest of it
// is written next. WriteNow (the stop) writes on the calling thread once a write under way
// has ended, and no older text can land after it; Abandon (the state_dir is another daemon's
// now) lets nothing land any more. Loop thread only.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/env.h"
#include "core/result.h"

namespace trainwatch {

class LatestFileWriter {
 public:
  // How long WriteNow waits for a write under way (a wedged disk).
  static constexpr std::chrono::seconds kWaitForWrite{5};
  // A write the pool has not run for this long (its threads all held by work on a hung file
  // system elsewhere) no longer holds the next back: that one is written on the loop, as before
  // the pool did it, once its own write is not the one under way.
  static constexpr std::chrono::seconds kPoolLateAfter{10};
  // `done` runs on the loop after each write the pool made, with how it went.
  using Done = std::function<void(const Status& written)>;
  LatestFileWriter(Env& env, std::string path, unsigned mode, Done done);
  ~LatestFileWriter();
  LatestFileWriter(const LatestFileWriter&) = delete;
  LatestFileWriter& operator=(const LatestFileWriter&) = delete;

  // Asks for `text` to be the file's; returns at once.
  void Write(std::string text);
  // Writes `text` now, on this thread, after the write under way (at most kWaitForWrite).
  Status WriteNow(std::string_view text);
  // Nothing more is written, not even what the pool has been handed (a write it has begun
  // ends as it would).
  void Abandon();
  bool writing() const { return writing_; }
  const std::string& path() const { return path_; }

 private:
  // What the pool's writes and the loop share: writes are made one at a time, under the
  // mutex, and one older than the last made is skipped.
  struct Shared {
    std::timed_mutex mutex;
    std::uint64_t written = 0;  // the generation of the last write made (under the mutex)
    std::atomic<bool> abandoned{false};
  };
  void Launch(std::string text);
  void WriteWaitingHere();

  Env& env_;
  std::string path_;
  unsigned mode_;
  Done done_;
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  bool writing_ = false;
  SteadyTime launched_{};
  bool said_late_ = false;
  std::optional<std::string> next_;
  std::uint64_t generation_ = 0;
};

}  // namespace trainwatch
