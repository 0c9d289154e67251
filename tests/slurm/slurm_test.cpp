#include <gtest/gtest.h>

#include "slurm/job_outcome.h"
#include "slurm/slurm_drain_sink.h"

namespace trainwatch::slurm {
namespace {

detect::Incident IncidentOf(rules::Cause cause, rules::Action action) {
  detect::Incident incident;
  incident.id = "20261128T101500Z-ab12";
  incident.kind = rules::RuleKind::kDevice;
  incident.summary = "habanalabs hl0: Device is not operational; \"quoted\" state=resume\n";
  incident.verdict.verdict = {cause, action};
  return incident;
}

TEST(SlurmDrain, OnlyANodeVerdictDrains) {
  EXPECT_EQ(NoDrainBecause(IncidentOf(rules::Cause::kHardware, rules::Action::kRebootNode)), "");
  EXPECT_EQ(NoDrainBecause(IncidentOf(rules::Cause::kUnknown, rules::Action::kExcludeNode)), "");
  EXPECT_EQ(NoDrainBecause(IncidentOf(rules::Cause::kApplication, rules::Action::kExcludeNode)),
            "the job's own failure (cause application) never drains a node");
  EXPECT_EQ(NoDrainBecause(IncidentOf(rules::Cause::kInfrastructure, rules::Action::kRetry)),
            "its action is retry, not exclude_node or reboot_node");
  detect::Incident peer = IncidentOf(rules::Cause::kHardware, rules::Action::kExcludeNode);
  peer.peer = detect::PeerLink{};
  EXPECT_NE(NoDrainBecause(peer).find("another node's failure"), std::string::npos);
}

TEST(SlurmDrain, TheReasonIsPlainTextOfBoundedLength) {
  detect::Incident incident = IncidentOf(rules::Cause::kHardware, rules::Action::kRebootNode);
  EXPECT_EQ(DrainReason(incident),
            "trainwatch: reboot_node (hardware): habanalabs hl0: Device is not operational   "
            "quoted  state resume  [incident 20261128T101500Z-ab12]");
  incident.summary = std::string(500, 'x');
  const std::string reason = DrainReason(incident);
  EXPECT_LE(reason.size(), 160u);
  EXPECT_NE(reason.find("x... [incident 20261128T101500Z-ab12]"), std::string::npos) << reason;
}

TEST(SlurmDrain, TheNodesSlurmName) {
  config::DaemonConfig config;
  EXPECT_EQ(SlurmNodeName(config, "gpu-17.cluster.example"), "gpu-17");
  config.cluster.node_name = "node-a";
  EXPECT_EQ(SlurmNodeName(config, "gpu-17"), "node-a");
  config.slurm.slurmd_nodename_env = "slurm-a";
  EXPECT_EQ(SlurmNodeName(config, "gpu-17"), "slurm-a");
  config.slurm.node_name = "configured";
  EXPECT_EQ(SlurmNodeName(config, "gpu-17"), "configured");
  config.slurm.node_name = "bad name;rm";  // never passed on
  EXPECT_EQ(SlurmNodeName(config, "gpu-17"), "slurm-a");
}

constexpr const char* kLog =
    R"({"id":"i1","kind":"crash","summary":"ValueError: bad","cause":"application","action":"inspect","job":{"id":"41"},"firings":[]}
{"bundle_for":"i1","bundle":"/b/1.tar.zst"}
{"id":"i2","kind":"device","summary":"Xid 79","cause":"hardware","action":"exclude_node","job":{"id":"42"},"firings":[]}
{"id":"i3","kind":"peer","summary":"node2 failed","cause":"hardware","action":"exclude_node","job":{"id":"42"},"firings":[]}
{"scheduler_for":"i2","what":"drain","done":true,"why":"scontrol drained it"}
{"bundle_for":"i2","bundle":"/b/2.tar.zst"}
)";

TEST(JobOutcome, SaysWhetherTheJobsFailureBlamesTheNode) {
  const JobOutcome own = JobOutcomeOf(kLog, "41");
  EXPECT_TRUE(own.found);
  EXPECT_TRUE(own.concluded);
  EXPECT_FALSE(own.node_fault);
  EXPECT_EQ(own.bundle, "/b/1.tar.zst");
  const JobOutcome device = JobOutcomeOf(kLog, "42");
  EXPECT_TRUE(device.node_fault);
  EXPECT_EQ(device.incident_id, "i2");  // not the later peer capture
  EXPECT_TRUE(device.concluded);
  EXPECT_EQ(device.drained, "drained: scontrol drained it");
  EXPECT_FALSE(JobOutcomeOf(kLog, "43").found);
}

}  // namespace
}  // namespace trainwatch::slurm
