// The watcher's own health: where trainwatch is blind now, so that "no alert" never silently
// means "not watching". Judged from a DaemonSnapshot alone (pure); `trainwatch status` shows
// the blind spots and the metrics textfile counts them by reason.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ops/daemon_snapshot.h"

namespace trainwatch::ops {

// Why trainwatch may miss a failure now. The metric's `reason` label.
inline constexpr std::string_view kBlindUnreadFile = "unread_file";
inline constexpr std::string_view kBlindKmsgNotRead = "kmsg_not_read";
inline constexpr std::string_view kBlindWorkerStuck = "worker_stuck";
inline constexpr std::string_view kBlindProcessWatchStalled = "process_watch_stalled";
inline constexpr std::string_view kBlindLoopSlow = "loop_slow";
inline constexpr std::string_view kBlindReasons[] = {kBlindUnreadFile, kBlindKmsgNotRead,
                                                     kBlindWorkerStuck, kBlindProcessWatchStalled,
                                                     kBlindLoopSlow};

// A thread-pool worker busy this long is stuck: no piece of the daemon's own pool work takes
// more than seconds.
inline constexpr std::int64_t kWorkerStuckSeconds = 60;
// A file holding bytes not read, with no line read from it for this long: its tail is stuck
// (a lost inotify watch, a read that blocks), and its failures go unseen.
inline constexpr std::int64_t kUnreadFileSeconds = 60;
// The loop late by this much within the last minute: status, reads and timers all wait.
inline constexpr double kLoopSlowSeconds = 1.0;

struct BlindSpot {
  std::string reason;  // one of kBlindReasons
  std::string what;    // the file, source or part that is blind
  std::string why;     // for a person
};

std::vector<BlindSpot> BlindSpots(const DaemonSnapshot& snapshot);

}  // namespace trainwatch::ops
