#include "collect/flight_recorder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "collect/rank_identity.h"
#include "collect/rooted_files.h"
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

std::int64_t MtimeNs(const struct stat& info) {
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
  const std::optional<uid_t> owner = ProcessOwner(proc_root, pid);
  if (!owner) {
    why = "the rank is gone";
    return std::nullopt;
  }
  FlightRecorderTarget target;
  target.root = ProcPath(proc_root, pid, "root");
  target.pipe = stem + std::to_string(rank) + ".pipe";
  target.dump = temp + std::to_string(rank);
  target.owner = *owner;
  if (Result<UniqueFd> old =
          RootedFiles(target.root).OpenOwned(target.dump, S_IFREG, target.owner, O_RDONLY);
      old) {
    struct stat info {};
    if (::fstat(old->get(), &info) == 0) {
      target.dump_mtime_ns = MtimeNs(info);
    }
  }
  return target;
}

bool PokeFlightRecorder(const FlightRecorderTarget& target, std::string& why) {
  // Opened O_NONBLOCK (once it is known to be the rank's FIFO): a FIFO nobody reads fails with
  // ENXIO instead of blocking the open.
  Result<UniqueFd> fd =
      RootedFiles(target.root).OpenOwned(target.pipe, S_IFIFO, target.owner, O_WRONLY);
  if (!fd) {
    why = fd.error().message.ends_with(std::strerror(ENXIO))
              ? "nobody reads " + target.pipe + " (the rank's dump thread is gone?)"
              : fd.error().message + "; not poked";
    return false;
  }
  if (::write(fd->get(), "1\n", 2) != 2) {
    why = target.pipe + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

std::optional<std::string> ReadFlightRecorderDump(const FlightRecorderTarget& target,
                                                  std::size_t max_bytes, std::string& why) {
  Result<UniqueFd> dump =
      RootedFiles(target.root)
          .OpenOwned(target.dump, S_IFREG, target.owner, O_RDONLY, static_cast<off_t>(max_bytes));
  if (!dump) {
    why = dump.error().message.ends_with(std::strerror(ENOENT))
              ? "poked, but no dump in " + target.dump
              : "poked, but its dump is refused: " + dump.error().message;
    return std::nullopt;
  }
  // The old dump is no answer: told by its mtime before a byte of it is read.
  struct stat info {};
  if (::fstat(dump->get(), &info) != 0 || MtimeNs(info) == target.dump_mtime_ns) {
    why = "poked, but no new dump in " + target.dump;
    return std::nullopt;
  }
  Result<ProcText> text = ReadToEnd(dump->get(), max_bytes);
  if (!text) {
    why = "poked, but its dump " + target.dump + " cannot be read" + text.error().message;
    return std::nullopt;
  }
  if (text->truncated) {  // it grew past the cap while read
    why = "poked, but its dump " + target.dump + " is over the cap of " +
          std::to_string(max_bytes) + " bytes";
    return std::nullopt;
  }
  return std::move(text->text);
}

}  // namespace trainwatch::collect
