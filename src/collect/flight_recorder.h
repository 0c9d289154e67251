// PyTorch's Flight Recorder: a rank whose environment sets a debug-info pipe and a trace buffer
// listens on the FIFO <pipe><rank>.pipe; anything written there makes it dump its ring buffer
// of recent collectives (a pickle) to <temp file><rank>. The variables of its generations:
// TORCH_NCCL_DEBUG_INFO_PIPE_FILE / TORCH_NCCL_TRACE_BUFFER_SIZE /
// TORCH_NCCL_DEBUG_INFO_TEMP_FILE (2.2 on), the TORCH_FR_ ones that replaced them, and the
// TORCH_HCCL_ ones of torch_npu. Debian 12's torch (1.13) has no pipe.
//
// Every path here is the rank's to name, and the daemon is root: both are resolved inside the
// rank's root (/proc/PID/root: no link or ".." leads out of it, a container's paths stay the
// container's), their last link is never followed, and each must be what it claims and the
// rank's: the pipe a FIFO, the dump a regular file of at most the cap, both owned by the rank's
// uid (a link to /etc/shadow, a FIFO as the dump, a root-owned file are refused, never written
// or read). Non-blocking, small file operations; any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trainwatch::collect {

struct FlightRecorderTarget {
  std::string root;                 // the rank's root as this process reaches it: /proc/PID/root
  std::string pipe;                 // the FIFO, as the rank names it (inside its root)
  std::string dump;                 // where the rank writes its dump (likewise)
  uid_t owner = 0;                  // the rank's uid: the pipe's and the dump's owner
  std::int64_t dump_mtime_ns = -1;  // the dump there before the poke; -1: none
};

// A rank's dump is refused past this (it is never cut: half a pickle is no answer), and one
// capture reads this much at most over all its ranks (RankCapture).
inline constexpr std::size_t kMaxFlightRecorderDump = 16 << 20;
inline constexpr std::size_t kMaxFlightRecorderDumps = 64 << 20;

// The Flight Recorder of the rank `rank` (pid `pid`, environment `environ`), when its
// environment enables one; else nullopt and `why` says why not.
std::optional<FlightRecorderTarget> FindFlightRecorder(pid_t pid, int rank,
                                                       std::string_view environ,
                                                       const std::string& proc_root,
                                                       std::string& why);

// Writes to the pipe without blocking; false with `why` when nobody reads it (ENXIO), or it
// is not the rank's FIFO, or it cannot be opened.
bool PokeFlightRecorder(const FlightRecorderTarget& target, std::string& why);

// The dump, once it is newer than the one before the poke; nullopt, with `why`, while it is
// not, or when it is not the rank's regular file of at most `max_bytes`.
std::optional<std::string> ReadFlightRecorderDump(const FlightRecorderTarget& target,
                                                  std::size_t max_bytes, std::string& why);

}  // namespace trainwatch::collect
