#include "ops/control_request.h"

#include <nlohmann/json.hpp>

namespace trainwatch::ops {

using json = nlohmann::json;

Result<ControlCommand> ParseControlRequest(const std::string& line) {
  const json request = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!request.is_object() || !request.contains("command")) {
    return Error{ControlErrorReply("bad request: expected {\"command\": ...}")};
  }
  ControlCommand command;
  try {
    const std::string name = request.value("command", "");
    if (name == "status") {
      return command;
    }
    if (name != "snapshot") {
      return Error{ControlErrorReply("unknown command: " + name)};
    }
    command.kind = ControlCommand::Kind::kSnapshot;
    command.reason = request.value("reason", command.reason);
    command.container = request.value("container", "");
    command.copy = request.value("copy", std::vector<std::string>{});
    command.logs = request.value("log", std::vector<std::string>{});
  } catch (const json::exception& e) {
    return Error{ControlErrorReply(std::string("bad request: ") + e.what())};
  }
  return command;
}

std::string ControlErrorReply(const std::string& message) {
  return json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string SnapshotReply(const capture::CaptureOutcome& outcome,
                          const std::string& incidents_file) {
  json answer = {{"incident", outcome.incident_id}, {"incidents_file", incidents_file}};
  if (!outcome.path.empty()) {
    answer["bundle"] = outcome.path;
    answer["bytes"] = outcome.bytes;
  }
  if (!outcome.error.empty()) {
    answer["bundle_error"] = outcome.error;
  }
  return answer.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace trainwatch::ops
