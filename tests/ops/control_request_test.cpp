#include "ops/control_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace trainwatch::ops {
namespace {

using json = nlohmann::json;

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
}

TEST(ControlRequest, BadRequestsGetAnErrorReplyNotAnException) {
  for (const char* line : {"", "not json", "[1, 2]", R"({"reason": "x"})", R"({"command": 7})",
                           R"({"command": "reboot"})", R"({"command": "snapshot", "copy": [1, 2]})",
                           R"({"command": "snapshot", "reason": ["a"]})"}) {
    Result<ControlCommand> command = ParseControlRequest(line);
    ASSERT_FALSE(command.ok()) << line;
    const json reply = json::parse(command.error().message);
    EXPECT_TRUE(reply.contains("error")) << line << " -> " << command.error().message;
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
