#include "slurm/slurm_drain_sink.h"

#include <spdlog/spdlog.h>

#include "capture/job_identity.h"
#include "config/yaml_shapes.h"
#include "detect/incident_json.h"
#include "ops/verdict_exit_code.h"

namespace trainwatch::slurm {
namespace {

constexpr std::size_t kMaxReasonBytes = 160;

std::string Plain(std::string_view text) {
  std::string plain;
  for (const char c : text) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == ' ' || c == '.' || c == ',' || c == ':' || c == '_' || c == '-' ||
                      c == '(' || c == ')' || c == '/' || c == '#' || c == '[' || c == ']';
    plain += keep ? c : ' ';
  }
  return plain;
}

}  // namespace

std::string DrainReason(const detect::Incident& incident) {
  const std::string tail = " [incident " + Plain(incident.id) + "]";
  std::string head =
      "trainwatch: " + std::string(rules::ActionName(incident.verdict.verdict.action)) + " (" +
      std::string(rules::CauseName(incident.verdict.verdict.cause)) +
      "): " + Plain(incident.summary);
  if (head.size() + tail.size() > kMaxReasonBytes) {
    head.resize(kMaxReasonBytes > tail.size() + 3 ? kMaxReasonBytes - tail.size() - 3 : 0);
    head += "...";
  }
  return head + tail;
}

std::string NoDrainBecause(const detect::Incident& incident) {
  const rules::Verdict& verdict = incident.verdict.verdict;
  if (incident.peer) {
    return "a capture for another node's failure: that node is the one at fault";
  }
  if (ops::BlamesTheNode(verdict)) {
    return {};
  }
  if (verdict.cause == rules::Cause::kApplication) {
    return "the job's own failure (cause application) never drains a node";
  }
  return "its action is " + std::string(rules::ActionName(verdict.action)) +
         ", not exclude_node or reboot_node";
}

std::string SlurmNodeName(const config::DaemonConfig& config, const std::string& hostname) {
  for (const std::string& name :
       {config.slurm.node_name, config.slurm.slurmd_nodename_env, config.cluster.node_name}) {
    if (!name.empty() && config::IsPlainName(name)) {
      return name;
    }
  }
  return hostname.substr(0, hostname.find('.'));
}

SlurmDrainSink::SlurmDrainSink(Env& env, incident::Pipeline& pipeline)
    : env_(env),
      pipeline_(pipeline),
      runner_(
          std::make_unique<collect::CommandRunner>(env, collect::CommandRunner::HungKey::kName)) {}

SlurmDrainSink::~SlurmDrainSink() = default;

void SlurmDrainSink::Recorded(const detect::Incident& incident) {
  const std::string kind = detect::IncidentKindName(incident);
  if (!config_.slurm.drain || (kind != "crash" && kind != "hang" && kind != "device" &&
                               kind != "diverged" && kind != "peer")) {
    return;  // off, or no failure of a job here (a slowdown, warnings, a manual snapshot)
  }
  ops::SchedulerAction action;
  action.incident_id = incident.id;
  action.what = "drain";
  action.node = SlurmNodeName(config_, capture::Hostname());
  action.at = env_.WallNow();
  action.why = NoDrainBecause(incident);
  if (!action.why.empty()) {
    pipeline_.TellActed(action);
    return;
  }
  if (running_ > 0) {
    action.why = "a drain of this node is already under way";
    pipeline_.TellActed(action);
    return;
  }
  action.reason = DrainReason(incident);
  config::CommandConfig command;
  command.name = "scontrol-drain";
  command.argv = {"scontrol", "update", "nodename=" + action.node, "state=drain",
                  "reason=" + action.reason};
  command.timeout = config_.slurm.timeout;
  command.max_output_bytes = 16 * 1024;
  command.as = "slurm/drain.txt";
  spdlog::warn("incident {}: draining Slurm node {}: {}", incident.id, action.node, action.reason);
  ++running_;
  runner_->Run({command}, [this, action](std::vector<collect::CollectorResult> results) mutable {
    --running_;
    const collect::CollectorResult& result = results.front();
    action.done = result.status == collect::CollectorStatus::kOk;
    action.why = action.done ? "scontrol drained it"
                             : "scontrol " + (result.detail.empty()
                                                  ? "exited " + std::to_string(result.exit_code)
                                                  : result.detail);
    for (const collect::Artifact& said : result.artifacts) {
      if (!said.content.empty()) {
        action.why += ": " + said.content.substr(0, 300);
      }
    }
    if (action.done) {
      spdlog::warn("incident {}: Slurm node {} drained", action.incident_id, action.node);
    } else {
      spdlog::error("incident {}: Slurm node {} not drained: {}", action.incident_id, action.node,
                    action.why);
    }
    pipeline_.TellActed(action);
  });
}

void SlurmDrainSink::Stopping() { runner_->Abort(); }

}  // namespace trainwatch::slurm
