#include "collect/flight_recorder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "collect/rank_identity.h"
#include "core/proc_files.h"
#include "core/unique_fd.h"

namespace trainwatch::collect {
namespace {

// The first of `names` set in `environ`.
std::string First(std::string_view environ, std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) {
    if (std::string value = EnvironVariable(environ, name); !value.empty()) {
      return value;
    }
  }
  return {};
}

std::int64_t MtimeNs(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return -1;
  }
  return static_cast<std::int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec;
}

}  // namespace

std::optional<FlightRecorderTarget> FindFlightRecorder(pid_t pid, int rank,
                                                       std::string_view environ,
                                                       const std::string& proc_root,
                                                       std::string& why) {
  const std::string stem =
      First(environ, {"TORCH_FR_DEBUG_INFO_PIPE_FILE", "TORCH_NCCL_DEBUG_INFO_PIPE_FILE",
                      "TORCH_HCCL_DEBUG_INFO_PIPE_FILE"});
  const std::string buffer = First(environ, {"TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE",
                                             "TORCH_HCCL_TRACE_BUFFER_SIZE"});
  if (stem.empty() || std::atol(buffer.c_str()) <= 0) {
    why = "not enabled (TORCH_NCCL_DEBUG_INFO_PIPE_FILE and TORCH_NCCL_TRACE_BUFFER_SIZE > 0)";
    return std::nullopt;
  }
  std::string temp = First(environ, {"TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE",
                                     "TORCH_HCCL_DEBUG_INFO_TEMP_FILE"});
  if (temp.empty()) {
    temp = "/tmp/nccl_trace_rank_";  // PyTorch's default
  }
  const std::string root = ProcPath(proc_root, pid, "root");
  FlightRecorderTarget target;
  target.pipe = root + stem + std::to_string(rank) + ".pipe";
  target.dump = root + temp + std::to_string(rank);
  target.dump_mtime_ns = MtimeNs(target.dump);
  return target;
}

bool PokeFlightRecorder(const FlightRecorderTarget& target, std::string& why) {
  // O_NONBLOCK: a FIFO nobody reads fails with ENXIO instead of blocking the open.
  UniqueFd fd(::open(target.pipe.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    why = errno == ENXIO ? "nobody reads " + target.pipe + " (the rank's dump thread is gone?)"
                         : target.pipe + ": " + std::strerror(errno);
    return false;
  }
  if (::write(fd.get(), "1\n", 2) != 2) {
    why = target.pipe + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

std::optional<std::string> ReadFlightRecorderDump(const FlightRecorderTarget& target,
                                                  std::size_t max_bytes) {
  const std::int64_t mtime = MtimeNs(target.dump);
  if (mtime < 0 || mtime == target.dump_mtime_ns) {
    return std::nullopt;
  }
  std::ifstream in(target.dump, std::ios::binary);
  std::string dump;
  dump.resize(max_bytes);
  in.read(dump.data(), static_cast<std::streamsize>(max_bytes));
  dump.resize(static_cast<std::size_t>(in.gcount()));
  return dump;
}

}  // namespace trainwatch::collect
