// Artifact and CollectorResult: what the capture stage hands to the bundle writer, as plain
// values. A collector (a command such as `hl-smi -q`, or an in-process one such as the
// environment of the training processes) yields one result with its files. Small outputs
// travel as bytes; big files (log tails, $HABANA_LOGS) as a path and a byte range, streamed by
// the writer. Value types; any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/stopwatch.h"

namespace trainwatch::collect {

struct Artifact {
  std::string path;     // inside the bundle: "device/hl-smi-q.txt", "logs/rank0.log"
  std::string content;  // the bytes, when `source_file` is empty
  // A file on disk to copy instead: `length` bytes from `offset` (a log's tail). Opened with
  // O_NOFOLLOW by the writer; a file that changed or vanished meanwhile is recorded, not fatal.
  std::string source_file;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  bool redact = true;  // pass through the redactor (everything but binary device dumps)
};

enum class CollectorStatus {
  kOk,      // ran and answered
  kFailed,  // ran and exited non-zero, or an in-process read failed
  // Ran and was refused by the kernel (it said EPERM or EACCES and exited non-zero): dmesg
  // without CAP_SYSLOG in a container. Where the daemon runs, not what the tool does.
  kNotPermitted,
  kMissing,    // the tool is not installed here
  kTimedOut,   // killed at its deadline (SIGTERM, then SIGKILL to its process group)
  kAbandoned,  // would not die even of SIGKILL (uninterruptible sleep: a wedged device)
  kSkipped,    // not for this incident kind, or its previous run is still hung
};
const char* CollectorStatusName(CollectorStatus status);

struct CollectorResult {
  std::string name;  // "hl-smi-q", "environment", "habana_logs"
  CollectorStatus status = CollectorStatus::kOk;
  int exit_code = 0;
  std::string detail;  // why it failed, was skipped or missing; empty when ok
  double duration_seconds = 0;
  std::uint64_t bytes = 0;  // output kept
  bool truncated = false;   // output beyond its limit was dropped
  std::vector<Artifact> artifacts;
};

// Building a result the same way in every collector.
// Appends one line to `result.detail`.
void AddDetail(CollectorResult& result, const std::string& line);
// An artifact holding `content`; `redact` false for text already redacted.
void AddText(CollectorResult& result, std::string path, std::string content, bool redact = true);
// An artifact naming `length` bytes of `source_file` from `offset`, streamed by the writer.
void AddRange(CollectorResult& result, std::string path, std::string source_file,
              std::uint64_t offset, std::uint64_t length);
// Fills in what every collector reports the same way: bytes, duration and the status.
// `asked` and `read` count the things asked for (pids, files, dirs) and those that could be
// read: kSkipped ("nothing to collect" unless detail says more) when nothing was asked,
// kFailed when nothing could be read, kOk otherwise.
void Finish(CollectorResult& result, const Stopwatch& stopwatch, std::size_t asked,
            std::size_t read);

}  // namespace trainwatch::collect
