#include "ops/control_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace trainwatch::ops {
namespace {

using json = nlohmann::json;

// Appended apart: GCC 12's false -Wrestrict on "literal" + std::string.
std::string Joined(std::initializer_list<std::string> parts) {
  std::string joined;
  for (const std::string& part : parts) {
    joined += part;
  }
  return joined;
}

TEST(ControlRequest, StatusAndSnapshot) {
  Result<ControlCommand> status = ParseControlRequest(R"({"command": "status"})");
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->kind, ControlCommand::Kind::kStatus);

  Result<ControlCommand> snapshot =
      ParseControlRequest(R"({"command": "snapshot", "reason": "loss spikes", "container": "abc",)"
                          R"( "copy": ["/etc/x"], "log": ["/logs/a.log", "/logs/b.log"]})");
  ASSERT_TRUE(snapshot.ok()) << snapshot.error().message;
  EXPECT_EQ(snapshot->kind, ControlCommand::Kind::kSnapshot);
  EXPECT_EQ(snapshot->reason, "loss spikes");
  EXPECT_EQ(snapshot->container, "abc");
  EXPECT_EQ(snapshot->copy, std::vector<std::string>{"/etc/x"});
  EXPECT_EQ(snapshot->logs, (std::vector<std::string>{"/logs/a.log", "/logs/b.log"}));

  Result<ControlCommand> bare = ParseControlRequest(R"({"command": "snapshot"})");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->reason, "manual snapshot");
  EXPECT_FALSE(bare->stacks) << "a snapshot stops no rank unless asked";
  Result<ControlCommand> stacks = ParseControlRequest(R"({"command": "snapshot", "stacks": true})");
  ASSERT_TRUE(stacks.ok());
  EXPECT_TRUE(stacks->stacks);
  Result<ControlCommand> bad = ParseControlRequest(R"({"command": "snapshot", "stacks": "yes"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find(R"(\"stacks\" must be true or false (got a string))"),
            std::string::npos)
      << bad.error().message;

  Result<ControlCommand> reload = ParseControlRequest(R"({"command": "reload"})");
  ASSERT_TRUE(reload.ok());
  EXPECT_EQ(reload->kind, ControlCommand::Kind::kReload);
  EXPECT_FALSE(ParseControlRequest(R"({"command": "reload", "reason": "x"})").ok());
  Result<ControlCommand> ack =
      ParseControlRequest(R"({"command": "ack", "id": "20261125T1000Z-ab1", "why": ""})");
  ASSERT_TRUE(ack.ok());
  EXPECT_EQ(ack->kind, ControlCommand::Kind::kAck);
  EXPECT_EQ(ack->id, "20261125T1000Z-ab1");
  EXPECT_EQ(ack->reason, "") << "an empty note is none";
  EXPECT_EQ(AckReply(Error{"incident x is not open in this daemon"}),
            R"({"error":"incident x is not open in this daemon","not_followed":true})");
  EXPECT_EQ(ReloadReply(std::string("2 sources, 85 rules")),
            R"({"reloaded":"2 sources, 85 rules"})");
  EXPECT_EQ(ReloadReply(Error{"refused"}), R"({"error":"refused"})");
}

TEST(ControlRequest, EmptyContainerMeansNone) {
  // The CLI sends "container": "" when no --container was given.
  Result<ControlCommand> snapshot =
      ParseControlRequest(R"({"command": "snapshot", "container": "", "copy": [], "log": []})");
  ASSERT_TRUE(snapshot.ok()) << snapshot.error().message;
  EXPECT_EQ(snapshot->container, "");
}

// Each malformed request gets a one-line error naming the field and what it must be.
TEST(ControlRequest, EachMalformedRequestGetsAnErrorNamingTheField) {
  const std::string huge(70 * 1024, 'x');
  const std::string long_reason =
      Joined({R"({"command": "snapshot", "reason": ")", std::string(1001, 'r'), "\"}"});
  const std::string many_paths = [] {
    std::string line = R"({"command": "snapshot", "copy": [)";
    for (int i = 0; i < 65; ++i) {
      line += i == 0 ? "\"/x\"" : ", \"/x\"";
    }
    line += "]}";
    return line;
  }();
  const std::string long_path =
      Joined({R"({"command": "snapshot", "log": ["/)", std::string(4096, 'p'), "\"]}"});
  struct Case {
    std::string line;
    std::string says;  // in the error
  };
  const std::vector<Case> cases = {
      {"", "not JSON"},
      {"not json", "not JSON"},
      {R"({"command": "status")", "not JSON"},
      {"[1, 2]", R"("request" must be a JSON object)"},
      {"\"status\"", R"("request" must be a JSON object)"},
      {"null", R"("request" must be a JSON object)"},
      {R"({"reason": "x"})",
       R"("command" must be "status", "snapshot", "reload" or "ack" (got no command))"},
      {R"({"command": 1})",
       R"("command" must be "status", "snapshot", "reload" or "ack" (got a number))"},
      {R"({"command": "ack"})", R"("id" must be an incident id)"},
      {R"({"command": "ack", "id": ""})", "(got an empty string)"},
      {R"({"command": "ack", "id": "x", "why": 3})", R"("why" must be a one-line note)"},
      {R"({"command": "ack", "id": "x", "force": true})", R"("ack" takes no field "force")"},
      {R"({"command": null})", "(got null)"},
      {R"({"command": ["status"]})", "(got an array)"},
      {R"({"command": "reboot"})", R"(got unknown command "reboot")"},
      {Joined({R"({"command": ")", std::string(1000, 'z'), "\"}"}), R"(zzz...")"},
      {R"({"command": "status", "verbose": true})", R"("status" takes no field "verbose")"},
      {R"({"command": "snapshot", "logs": ["/a"]})", R"(takes no field "logs")"},
      {R"({"command": "snapshot", "reason": null})", R"("reason" must be a one-line reason)"},
      {R"({"command": "snapshot", "reason": ["a"]})", R"("reason" must be)"},
      {R"({"command": "snapshot", "reason": 7})", "(got a number)"},
      {R"({"command": "snapshot", "reason": ""})", "(got an empty string)"},
      {R"({"command": "snapshot", "reason": "two\nlines"})", "(got a control character)"},
      {R"({"command": "snapshot", "reason": "nul\u0000here"})", "(got a control character)"},
      {long_reason, "(got a string of 1001 bytes)"},
      {R"({"command": "snapshot", "container": false})", R"("container" must be a container)"},
      {R"({"command": "snapshot", "container": 12})", "(got a number)"},
      {R"({"command": "snapshot", "container": "--privileged"})", "(got other characters)"},
      {R"({"command": "snapshot", "container": "a b"})", "(got other characters)"},
      {Joined({R"({"command": "snapshot", "container": ")", std::string(256, 'c'), "\"}"}),
       "(got a string of 256 bytes)"},
      {R"({"command": "snapshot", "copy": [1]})", R"("copy[0]" must be an absolute path)"},
      {R"({"command": "snapshot", "copy": [1, 2]})", R"("copy[0]")"},
      {R"({"command": "snapshot", "copy": "/etc/x"})", R"("copy" must be an array)"},
      {R"({"command": "snapshot", "copy": null})", R"("copy" must be an array)"},
      {R"({"command": "snapshot", "copy": ["/a", null]})", R"("copy[1]")"},
      {R"({"command": "snapshot", "copy": ["relative/x"]})", "(got a relative path)"},
      {R"({"command": "snapshot", "copy": [""]})", "(got an empty string)"},
      {many_paths, "(got an array of 65)"},
      {R"({"command": "snapshot", "log": {"a": 1}})", R"("log" must be an array)"},
      {R"({"command": "snapshot", "log": [true]})", R"("log[0]")"},
      {long_path, R"("log[0]")"},
      {huge, "longer than 65536 bytes"},
  };
  for (const Case& c : cases) {
    Result<ControlCommand> command = ParseControlRequest(c.line);
    const std::string shown = c.line.substr(0, 100);
    ASSERT_FALSE(command.ok()) << shown;
    const std::string& reply = command.error().message;
    EXPECT_EQ(reply.find('\n'), std::string::npos) << reply;
    EXPECT_LT(reply.size(), 400u) << reply;
    const json parsed = json::parse(reply, nullptr, false);
    ASSERT_TRUE(parsed.is_object() && parsed["error"].is_string()) << shown << " -> " << reply;
    const std::string error = parsed["error"];
    EXPECT_NE(error.find(c.says), std::string::npos) << shown << " -> " << reply;
  }
}

TEST(ControlRequest, SnapshotReplyNamesTheBundleOrWhyNone) {
  capture::CaptureOutcome written;
  written.incident_id = "id-1";
  written.path = "/b/x.tar.zst";
  written.bytes = 10;
  const json ok = json::parse(SnapshotReply(written, "/s/incidents.jsonl"));
  EXPECT_EQ(ok["bundle"], "/b/x.tar.zst");
  EXPECT_EQ(ok["bytes"], 10);
  EXPECT_FALSE(ok.contains("bundle_error"));

  capture::CaptureOutcome failed;
  failed.incident_id = "id-2";
  failed.error = "disk full";
  const json none = json::parse(SnapshotReply(failed, "/s/incidents.jsonl"));
  EXPECT_EQ(none["incident"], "id-2");
  EXPECT_EQ(none["incidents_file"], "/s/incidents.jsonl");
  EXPECT_EQ(none["bundle_error"], "disk full");
  EXPECT_FALSE(none.contains("bundle"));
}

}  // namespace
}  // namespace trainwatch::ops
