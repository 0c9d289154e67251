// Which job the processes on this node belong to, and which node this is: what lets the
// daemons of one job's nodes find each other's incidents. The job id comes from, in order:
// the config (`cluster.job_id`, fixed, or expanded from the daemon's own environment — a
// sidecar gets its pod's job name from the downward API that way); the first of the config's
// `cluster.job_id_variables` set in a training process's environment; then
// TRAINWATCH_JOB_ID, TORCHELASTIC_RUN_ID (unless torchrun's default "none"), SLURM_JOB_ID;
// and last MASTER_ADDR:MASTER_PORT, which every rank of a torch.distributed job shares. The
// node: `cluster.node_name`, else the daemon's NODE_NAME (Kubernetes' spec.nodeName by the
// downward API), else the hostname. The node rank and this node's ranks come from the
// processes' identities (collect/rank_identity.h). Pure; any thread.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/daemon_config.h"
#include "detect/incident.h"
#include "source/writers.h"

namespace trainwatch::capture {

// Where the job's processes are looked up in order; the others come after.
inline constexpr const char* kJobIdVariables[] = {"TRAINWATCH_JOB_ID", "TORCHELASTIC_RUN_ID",
                                                  "SLURM_JOB_ID"};

// `environs`: the training processes' environments (NUL-separated, as /proc/PID/environ),
// those the incident names first.
// `uids[i]`, where given, owns `environs[i]`: the job's uid is that of the process its id was
// read from (the first process's, for an id from the config).
detect::JobIdentity IdentifyJob(const std::vector<std::string_view>& environs,
                                const config::ClusterConfig& cluster, std::string_view hostname,
                                const std::vector<std::optional<uid_t>>& uids = {});

// The environment that names `writer`'s job: its own, or, for Slurm's step daemon — root's
// slurmstepd, titled "slurmstepd: [JOB.STEP]", which holds a batch job's output file open for
// the whole job while the job's own processes may come and go unseen — SLURM_JOB_ID and
// SLURM_STEP_ID as its title names them, before its own. A title of any other owner, or not of
// that shape, adds nothing. (slurmstepd titles itself after it starts: the sources look at one
// found untitled again, watch/sources.cpp.)
std::string JobEnvironOf(const source::WriterProcess& writer);

// This machine's hostname ("unknown-host" when it cannot be read).
std::string Hostname();
// The node, and where its name came from ("config", "NODE_NAME", "hostname").
std::pair<std::string, std::string> NodeName(const config::ClusterConfig& cluster,
                                             std::string_view hostname);

}  // namespace trainwatch::capture
