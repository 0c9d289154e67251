// SlurmDrainSink: with `slurm.drain` on, this node is drained in Slurm for a verdict that says
// the node is at fault — exclude_node or reboot_node, from the rules or the retry policy
// (ops/retry_policy.h) — so that no next job lands on it: `scontrol update nodename=NODE
// state=drain reason="trainwatch: ..."`, under slurm.timeout. Never for the job's own failure
// (an application cause), nor for a capture made for another node's failure (that node is
// the one at fault), nor for a hang alone; every failure's record says what was done
// ({"scheduler_for": id, ...}, ops/scheduler_action.h). Loop thread only.
#pragma once

#include <memory>
#include <string>

#include "collect/command_runner.h"
#include "incident/incident_sink.h"

namespace trainwatch::slurm {

// The reason Slurm is given: "trainwatch: <action> (<cause>): <summary> [incident <id>]", of
// letters, digits, spaces and plain punctuation only (it comes from a log), at most 160 bytes.
std::string DrainReason(const detect::Incident& incident);

// Why `incident` drains no node; empty: it does.
std::string NoDrainBecause(const detect::Incident& incident);

// The node's Slurm name: slurm.node_name, else the daemon's SLURMD_NODENAME, else
// cluster.node_name, else the hostname up to its first dot.
std::string SlurmNodeName(const config::DaemonConfig& config, const std::string& hostname);

class SlurmDrainSink final : public incident::IncidentSink {
 public:
  SlurmDrainSink(Env& env, incident::Pipeline& pipeline);
  ~SlurmDrainSink() override;

  void Configure(const config::DaemonConfig& config) override { config_ = config; }
  void Recorded(const detect::Incident& incident) override;
  void Stopping() override;
  bool idle() const override { return running_ == 0; }

 private:
  Env& env_;
  incident::Pipeline& pipeline_;
  config::DaemonConfig config_;
  std::unique_ptr<collect::CommandRunner> runner_;
  int running_ = 0;
};

}  // namespace trainwatch::slurm
