#include "ops/node_verdict.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace trainwatch::ops {
namespace {

using std::chrono::hours;

const detect::WallTime kBoot = detect::WallTime{} + std::chrono::seconds(1795000000);

std::string Record(const std::string& id, const std::string& kind, const std::string& cause,
                   const std::string& action, detect::WallTime opened,
                   const std::string& attempt = "") {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(opened.time_since_epoch()).count();
  return R"({"id":")" + id + R"(","kind":")" + kind + R"(","summary":"the summary of )" + id +
         R"(","cause":")" + cause + R"(","action":")" + action + R"(","opened_ms":)" +
         std::to_string(ms) + R"(,"job":{"id":"77"},"firings":[])" +
         (attempt.empty() ? "" : R"(,"attempt":)" + attempt) + "}\n";
}

NodeFacts FactsOf(const std::string& log) {
  NodeFacts facts;
  facts.node = "gpu-17";
  facts.now = kBoot + hours(5);
  facts.booted = kBoot;
  facts.incidents_file = "/var/lib/trainwatch/incidents.jsonl";
  facts.incidents = NodeIncidentsOf(log);
  facts.devices = {{"hl-smi", DeviceCheck::Result::kAnswered, "", 0.4},
                   {"nvidia-smi", DeviceCheck::Result::kMissing, "", 0}};
  facts.ranks_checked = 8;
  return facts;
}

TEST(NodeVerdict, AQuietNodePasses) {
  const std::string log = Record("a", "crash", "application", "inspect", kBoot + hours(1));
  const NodeVerdict verdict = JudgeNode(FactsOf(log));
  EXPECT_EQ(verdict.level, Readiness::kPass);
  EXPECT_EQ(ExitCodeOf(verdict.level), 0);
  EXPECT_TRUE(verdict.reasons.empty());
  const std::string text = NodeVerdictText(verdict);
  EXPECT_NE(text.find("PASS: node gpu-17 is fit for a job"), std::string::npos) << text;
  EXPECT_NE(text.find("checked  hl-smi: answered in 0.4 s"), std::string::npos) << text;
  EXPECT_NE(text.find("checked  ranks: 8 rank process(es), 0 stuck"), std::string::npos) << text;
}

TEST(NodeVerdict, ADeviceFailureSinceBootIsCriticalUntilAcknowledged) {
  std::string log = Record("before", "device", "hardware", "reboot_node", kBoot - hours(1)) +
                    Record("since", "device", "hardware", "reboot_node", kBoot + hours(2));
  NodeVerdict verdict = JudgeNode(FactsOf(log));
  EXPECT_EQ(verdict.level, Readiness::kCritical);
  ASSERT_EQ(verdict.reasons.size(), 2u);
  EXPECT_EQ(verdict.reasons[0].incident, "since");
  // The one before the boot was answered by the reboot: a warning, after the worse.
  EXPECT_EQ(verdict.reasons[1].incident, "before");
  EXPECT_EQ(verdict.reasons[1].level, Readiness::kWarning);
  EXPECT_EQ(verdict.reasons[0].action, "reboot_node");
  const nlohmann::json json = nlohmann::json::parse(NodeVerdictJson(verdict));
  EXPECT_EQ(json["schema"], "trainwatch.node-verdict/1");
  EXPECT_EQ(json["verdict"], "CRITICAL");
  EXPECT_EQ(json["exit_code"], 2);
  EXPECT_EQ(json["actions"], nlohmann::json::array({"reboot_node"}));
  EXPECT_EQ(json["reasons"][0]["check"], "incidents");
  // The job went on: still the node's device, still CRITICAL.
  log += R"({"resolved":"since","how":"progress"})"
         "\n";
  EXPECT_EQ(JudgeNode(FactsOf(log)).level, Readiness::kCritical);
  log += R"({"resolved":"since","how":"ack"})"
         "\n";
  verdict = JudgeNode(FactsOf(log));
  EXPECT_EQ(verdict.level, Readiness::kWarning);
  EXPECT_EQ(ExitCodeOf(verdict.level), 1);
  EXPECT_NE(NodeVerdictText(verdict).find("WARNING: node gpu-17 may run a job"), std::string::npos);
  log += R"({"resolved":"before","how":"ack"})"
         "\n";
  EXPECT_EQ(JudgeNode(FactsOf(log)).level, Readiness::kPass);
}

TEST(NodeVerdict, ThePolicysExclusionOutlivesAReboot) {
  const std::string attempt =
      R"({"number":3,"why":"this node failed first in attempts 1, 2 and 3 in a row (unknown): exclude the node","remedy_failed":false})";
  const std::string log =
      Record("x", "crash", "unknown", "exclude_node", kBoot - hours(30), attempt);
  const NodeVerdict verdict = JudgeNode(FactsOf(log));
  EXPECT_EQ(verdict.level, Readiness::kCritical);
  ASSERT_EQ(verdict.reasons.size(), 1u);
  EXPECT_EQ(verdict.reasons[0].check, "policy");
  EXPECT_NE(verdict.reasons[0].text.find("excluded: this node failed first"), std::string::npos)
      << verdict.reasons[0].text;
  // A week on, it is forgotten.
  NodeFacts later = FactsOf(log);
  later.now = kBoot + kExclusionFor;
  EXPECT_EQ(JudgeNode(later).level, Readiness::kPass);
}

TEST(NodeVerdict, AHungDeviceToolOrAStuckRankIsCriticalAndUnreadableIsUnknown) {
  NodeFacts facts = FactsOf("");
  facts.devices = {{"hl-smi", DeviceCheck::Result::kHung, "killed at its deadline", 10}};
  NodeVerdict verdict = JudgeNode(facts);
  EXPECT_EQ(verdict.level, Readiness::kCritical);
  EXPECT_NE(verdict.reasons[0].text.find("hl-smi did not answer within 10 s"), std::string::npos);
  facts = FactsOf("");
  facts.stuck = {{4242, "rank 3", "hl_device_wait", 2}};
  verdict = JudgeNode(facts);
  EXPECT_EQ(verdict.level, Readiness::kCritical);
  EXPECT_NE(verdict.reasons[0].text.find("rank 3 (pid 4242) is stuck in the kernel"),
            std::string::npos);
  facts = FactsOf("");
  facts.incidents_error = "permission denied";
  verdict = JudgeNode(facts);
  EXPECT_EQ(verdict.level, Readiness::kUnknown);
  EXPECT_EQ(ExitCodeOf(verdict.level), 3);
  // CRITICAL outranks UNKNOWN.
  facts.stuck = {{1, "rank 0", "", 2}};
  EXPECT_EQ(JudgeNode(facts).level, Readiness::kCritical);
}

TEST(NodeVerdict, ReadsOnlyWholeRecords) {
  const std::string log = "not json\n{\"id\":\"a\"}\n" +
                          Record("b", "device", "driver", "reboot_node", kBoot + hours(1)) +
                          R"({"id":"c","kind":"crash","firings":[])";  // unfinished
  const std::vector<NodeIncident> incidents = NodeIncidentsOf(log);
  ASSERT_EQ(incidents.size(), 1u);
  EXPECT_EQ(incidents[0].id, "b");
  EXPECT_EQ(incidents[0].cause, rules::Cause::kDriver);
  EXPECT_EQ(incidents[0].job_id, "77");
}

}  // namespace
}  // namespace trainwatch::ops
