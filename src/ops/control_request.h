// The control socket's protocol, daemon side: a request line parsed into what it asks, and the
// replies as JSON lines. `trainwatch status` asks {"command": "status"}; `trainwatch snapshot`
// {"command": "snapshot", "reason", "container", "copy": [...], "log": [...]}; `trainwatch
// reload` (the unit's ExecReload=) {"command": "reload"}, answered with the verdict; `trainwatch
// incidents ack` {"command": "ack", "id", "why"}, answered with the resolution recorded. Pure
// functions; any thread. Every field is checked for its type and value: a bad one gets an error
// reply naming the field and what it must be; nothing a client sends can throw.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "capture/capture_types.h"
#include "core/result.h"
#include "ops/incident_lifecycle.h"

namespace trainwatch::ops {

// What a request may hold: a request line at most 64 KiB (the server cuts longer ones off);
// "reason" one line of at most 1,000 bytes; "container" a docker/containerd id or name of at
// most 255 bytes; "copy" and "log" at most 64 absolute paths each, each at most 4,096 bytes.
// No string may hold a control character (a NUL would cut a path or a hook's environment).
inline constexpr std::size_t kMaxControlRequestBytes = 64 * 1024;
inline constexpr std::size_t kMaxControlReasonBytes = 1000;
inline constexpr std::size_t kMaxControlContainerBytes = 255;
inline constexpr std::size_t kMaxControlPaths = 64;
inline constexpr std::size_t kMaxControlPathBytes = 4096;
inline constexpr std::size_t kMaxControlIdBytes = 200;

struct ControlCommand {
  enum class Kind { kStatus, kSnapshot, kReload, kAck };
  Kind kind = Kind::kStatus;
  // kSnapshot; kAck's note (empty: none given).
  std::string reason = "manual snapshot";
  std::string id;  // kAck
  std::string container;
  std::vector<std::string> copy;
  std::vector<std::string> logs;
  bool stacks = false;  // kSnapshot: the ranks' stacks by the tools that stop a rank
};

// Fails with the reply to send ({"error": "bad request: \"FIELD\" must be ... (got ...)"}): a
// request that is not a JSON object, names no command or an unknown one, has a field the
// command does not take, or a field of the wrong type or value.
Result<ControlCommand> ParseControlRequest(const std::string& line);

// {"error": message}.
std::string ControlErrorReply(const std::string& message);
// A reload's answer: {"reloaded": what now runs}, or {"error": why the old config stays}.
std::string ReloadReply(const Result<std::string>& verdict);
// A snapshot's answer: the incident, and the bundle's path and size or why there is none.
// An ack's answer: {"resolved": id, "how", "why", "at", ...}, or {"error": why not,
// "not_followed": true} when this daemon does not follow the incident (the client records the
// ack in the log itself).
std::string AckReply(const Result<Resolution>& resolution);
std::string SnapshotReply(const capture::CaptureOutcome& outcome,
                          const std::string& incidents_file);

}  // namespace trainwatch::ops
