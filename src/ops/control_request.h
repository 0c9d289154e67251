// The control socket's protocol, daemon side: a request line parsed into what it asks, and the
// replies as JSON lines. `trainwatch status` asks {"command": "status"}; `trainwatch snapshot`
// {"command": "snapshot", "reason", "container", "copy": [...], "log": [...]}. Pure functions;
// any thread.
#pragma once

#include <string>
#include <vector>

#include "capture/capturer.h"
#include "core/result.h"

namespace trainwatch::ops {

struct ControlCommand {
  enum class Kind { kStatus, kSnapshot };
  Kind kind = Kind::kStatus;
  // kSnapshot.
  std::string reason = "manual snapshot";
  std::string container;
  std::vector<std::string> copy;
  std::vector<std::string> logs;
};

// Fails with the reply to send: a request that is not JSON, names no command or an unknown
// one, or has fields of the wrong type.
Result<ControlCommand> ParseControlRequest(const std::string& line);

// {"error": message}.
std::string ControlErrorReply(const std::string& message);
// A snapshot's answer: the incident, and the bundle's path and size or why there is none.
std::string SnapshotReply(const capture::CaptureOutcome& outcome,
                          const std::string& incidents_file);

}  // namespace trainwatch::ops
