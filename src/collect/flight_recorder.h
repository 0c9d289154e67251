// PyTorch's Flight Recorder: a rank whose environment sets a debug-info pipe and a trace buffer
// listens on the FIFO <pipe><rank>.pipe; anything written there makes it dump its ring buffer
// of recent collectives (a pickle) to <temp file><rank>. The variables of its generations:
// TORCH_NCCL_DEBUG_INFO_PIPE_FILE / TORCH_NCCL_TRACE_BUFFER_SIZE /
// TORCH_NCCL_DEBUG_INFO_TEMP_FILE (2.2 on), the TORCH_FR_ ones that replaced them, and the
// TORCH_HCCL_ ones of torch_npu. Debian 12's torch (1.13) has no pipe. Blocking, small file
// operations; any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trainwatch::collect {

struct FlightRecorderTarget {
  std::string pipe;                 // the FIFO, as this process reaches it (through /proc/PID/root)
  std::string dump;                 // where the rank writes its dump (likewise)
  std::int64_t dump_mtime_ns = -1;  // the dump there before the poke; -1: none
};

// The Flight Recorder of the rank `rank` (pid `pid`, environment `environ`), when its
// environment enables one; else nullopt and `why` says why not.
std::optional<FlightRecorderTarget> FindFlightRecorder(pid_t pid, int rank,
                                                       std::string_view environ,
                                                       const std::string& proc_root,
                                                       std::string& why);

// Writes to the pipe without blocking; false with `why` when nobody reads it (ENXIO) or it
// cannot be opened.
bool PokeFlightRecorder(const FlightRecorderTarget& target, std::string& why);

// The dump, once it is newer than the one before the poke; nullopt while it is not.
std::optional<std::string> ReadFlightRecorderDump(const FlightRecorderTarget& target,
                                                  std::size_t max_bytes = 64 << 20);

}  // namespace trainwatch::collect
