#include "ops/control_request.h"

#include <algorithm>
#include <initializer_list>
#include <nlohmann/json.hpp>

#include "ops/incident_log.h"

namespace trainwatch::ops {
namespace {

using json = nlohmann::json;

// What a client sent, in words, for "expected X, got Y".
std::string Described(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return "a number";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    default:
      return "something else";
  }
}

Error Bad(const std::string& field, const std::string& expected, const std::string& got) {
  std::string message = "bad request: \"";
  message += field;
  message += "\" must be ";
  message += expected;
  message += " (got ";
  message += got;
  message += ")";
  return Error{ControlErrorReply(message)};
}

// A client's string quoted back in an error, cut short: the reply stays one short line.
std::string Clipped(const std::string& text) {
  if (text.size() <= 64) {
    return text;
  }
  std::string clipped = text.substr(0, 64);
  clipped += "...";
  return clipped;
}

bool HasControlCharacter(const std::string& text) {
  return std::any_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// A string of 1..max_bytes bytes without control characters (they would break the log line
// or, for a NUL, cut a path or a hook's environment short).
Result<std::string> Text(const json& value, const std::string& field, std::size_t max_bytes,
                         const std::string& what) {
  std::string expected = what;
  expected += " (a string of 1 to ";
  expected += std::to_string(max_bytes);
  expected += " bytes without control characters)";
  if (!value.is_string()) {
    return Bad(field, expected, Described(value));
  }
  const std::string& text = value.get_ref<const std::string&>();
  if (text.empty()) {
    return Bad(field, expected, "an empty string");
  }
  if (text.size() > max_bytes) {
    std::string got = "a string of ";
    got += std::to_string(text.size());
    got += " bytes";
    return Bad(field, expected, got);
  }
  if (HasControlCharacter(text)) {
    return Bad(field, expected, "a control character");
  }
  return text;
}

bool IsContainerName(const std::string& name) {
  // Docker and containerd ids and names; never a leading '-' (it lands in a collector's argv).
  const auto word = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  return word(name.front()) && std::all_of(name.begin(), name.end(), [&](char c) {
           return word(c) || c == '_' || c == '.' || c == '-';
         });
}

// An array of absolute paths: the daemon's working directory is not the client's.
Result<std::vector<std::string>> Paths(const json& value, const std::string& field) {
  std::string expected = "an array of at most ";
  expected += std::to_string(kMaxControlPaths);
  expected += " absolute paths";
  if (!value.is_array()) {
    return Bad(field, expected, Described(value));
  }
  if (value.size() > kMaxControlPaths) {
    std::string got = "an array of ";
    got += std::to_string(value.size());
    return Bad(field, expected, got);
  }
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < value.size(); ++i) {
    std::string item = field;
    item += "[";
    item += std::to_string(i);
    item += "]";
    Result<std::string> path = Text(value[i], item, kMaxControlPathBytes, "an absolute path");
    if (!path) {
      return path.error();
    }
    if (path->front() != '/') {
      return Bad(item, "an absolute path", "a relative path");
    }
    paths.push_back(std::move(*path));
  }
  return paths;
}

// The fields `command` takes; any other is a client's mistake (a typo like "logs") worth
// saying rather than silently ignoring.
Status OnlyFields(const json& request, const std::string& command,
                  std::initializer_list<const char*> allowed) {
  for (const auto& [key, value] : request.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) {
      continue;
    }
    std::string message = "bad request: \"";
    message += command;
    message += "\" takes no field \"";
    message += Clipped(key);
    message += "\" (it takes:";
    for (const char* name : allowed) {
      message += " ";
      message += name;
    }
    message += ")";
    return Error{ControlErrorReply(message)};
  }
  return Status::Ok();
}

Result<ControlCommand> Snapshot(const json& request) {
  if (Status fields = OnlyFields(request, "snapshot",
                                 {"command", "reason", "container", "copy", "log", "stacks"});
      !fields) {
    return fields.error();
  }
  ControlCommand command;
  command.kind = ControlCommand::Kind::kSnapshot;
  if (request.contains("reason")) {
    Result<std::string> reason =
        Text(request["reason"], "reason", kMaxControlReasonBytes, "a one-line reason");
    if (!reason) {
      return reason.error();
    }
    command.reason = std::move(*reason);
  }
  if (request.contains("container")) {
    // The CLI sends "" when no --container was given.
    const json& container = request["container"];
    if (!(container.is_string() && container.get_ref<const std::string&>().empty())) {
      Result<std::string> name =
          Text(container, "container", kMaxControlContainerBytes, "a container id or name");
      if (!name) {
        return name.error();
      }
      if (!IsContainerName(*name)) {
        return Bad("container", "a container id or name ([A-Za-z0-9][A-Za-z0-9_.-]*)",
                   "other characters");
      }
      command.container = std::move(*name);
    }
  }
  if (request.contains("stacks")) {
    if (!request["stacks"].is_boolean()) {
      return Bad("stacks", "true or false", Described(request["stacks"]));
    }
    command.stacks = request["stacks"].get<bool>();
  }
  for (const auto& [field, out] : {std::pair{"copy", &command.copy}, {"log", &command.logs}}) {
    if (request.contains(field)) {
      Result<std::vector<std::string>> paths = Paths(request[field], field);
      if (!paths) {
        return paths.error();
      }
      *out = std::move(*paths);
    }
  }
  return command;
}

Result<ControlCommand> Ack(const json& request) {
  if (Status fields = OnlyFields(request, "ack", {"command", "id", "why"}); !fields) {
    return fields.error();
  }
  ControlCommand command;
  command.kind = ControlCommand::Kind::kAck;
  command.reason.clear();
  Result<std::string> id = Text(request.contains("id") ? request["id"] : json(), "id",
                                kMaxControlIdBytes, "an incident id");
  if (!id) {
    return id.error();
  }
  command.id = std::move(*id);
  if (request.contains("why") &&
      !(request["why"].is_string() && request["why"].get_ref<const std::string&>().empty())) {
    Result<std::string> why =
        Text(request["why"], "why", kMaxControlReasonBytes, "a one-line note");
    if (!why) {
      return why.error();
    }
    command.reason = std::move(*why);
  }
  return command;
}

}  // namespace

Result<ControlCommand> ParseControlRequest(const std::string& line) {
  if (line.size() > kMaxControlRequestBytes) {
    std::string message = "bad request: longer than ";
    message += std::to_string(kMaxControlRequestBytes);
    message += " bytes";
    return Error{ControlErrorReply(message)};
  }
  const json request = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded()) {
    return Error{ControlErrorReply(
        "bad request: not JSON (expected one line {\"command\": \"status\", \"snapshot\", "
        "\"reload\" or \"ack\"})")};
  }
  if (!request.is_object()) {
    return Bad("request", "a JSON object {\"command\": ...}", Described(request));
  }
  const std::string expected = "\"status\", \"snapshot\", \"reload\" or \"ack\"";
  if (!request.contains("command")) {
    return Bad("command", expected, "no command");
  }
  const json& name = request["command"];
  if (!name.is_string()) {
    return Bad("command", expected, Described(name));
  }
  const std::string& command = name.get_ref<const std::string&>();
  if (command == "status") {
    if (Status fields = OnlyFields(request, "status", {"command"}); !fields) {
      return fields.error();
    }
    return ControlCommand{};
  }
  if (command == "reload") {
    if (Status fields = OnlyFields(request, "reload", {"command"}); !fields) {
      return fields.error();
    }
    ControlCommand reload;
    reload.kind = ControlCommand::Kind::kReload;
    return reload;
  }
  if (command == "snapshot") {
    return Snapshot(request);
  }
  if (command == "ack") {
    return Ack(request);
  }
  // A huge or binary name is not echoed whole.
  std::string got = "unknown command \"";
  got += Clipped(command);
  got += "\"";
  return Bad("command", expected, got);
}

std::string ControlErrorReply(const std::string& message) {
  return json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string ReloadReply(const Result<std::string>& verdict) {
  if (!verdict) {
    return ControlErrorReply(verdict.error().message);
  }
  return json{{"reloaded", *verdict}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string AckReply(const Result<Resolution>& resolution) {
  if (!resolution) {
    return json{{"error", resolution.error().message}, {"not_followed", true}}.dump(
        -1, ' ', false, json::error_handler_t::replace);
  }
  return ResolutionJson(*resolution);
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
