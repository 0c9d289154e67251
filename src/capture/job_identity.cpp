#include "capture/job_identity.h"

#include <unistd.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "collect/rank_identity.h"

namespace trainwatch::capture {
namespace {

// The first environment that sets `variable` (to something other than torchrun's "none").
std::string FirstSet(const std::vector<std::string_view>& environs, std::string_view variable,
                     std::size_t* at = nullptr) {
  for (std::size_t i = 0; i < environs.size(); ++i) {
    std::string value = collect::EnvironVariable(environs[i], variable);
    if (!value.empty() && !(variable == "TORCHELASTIC_RUN_ID" && value == "none")) {
      if (at != nullptr) {
        *at = i;
      }
      return value;
    }
  }
  return {};
}

// The index of the environment the id came from (0 for the config's).
std::size_t FindJobId(const std::vector<std::string_view>& environs,
                      const config::ClusterConfig& cluster, detect::JobIdentity& job) {
  if (!cluster.job_id.empty()) {
    job.id = cluster.job_id;
    job.id_from = "config";
    return 0;
  }
  std::size_t at = 0;
  std::vector<std::string> variables = cluster.job_id_variables;
  variables.insert(variables.end(), std::begin(kJobIdVariables), std::end(kJobIdVariables));
  for (const std::string& variable : variables) {
    if (std::string value = FirstSet(environs, variable, &at); !value.empty()) {
      job.id = std::move(value);
      job.id_from = variable;
      return at;
    }
  }
  const std::string addr = FirstSet(environs, "MASTER_ADDR", &at);
  const std::string port = FirstSet(environs, "MASTER_PORT");
  if (!addr.empty() && !port.empty()) {
    job.id = addr + ":" + port;
    job.id_from = "MASTER_ADDR:MASTER_PORT";
  }
  return at;
}

bool IsSlurmId(std::string_view text) {
  return !text.empty() && text.size() <= 32 &&
         text.find_first_not_of("0123456789_") == std::string_view::npos && text.front() != '_';
}

}  // namespace

std::string JobEnvironOf(const source::WriterProcess& writer) {
  constexpr std::string_view kTitle = "slurmstepd: [";
  const std::string_view cmdline(writer.cmdline);
  if (writer.uid != 0 || !cmdline.starts_with(kTitle)) {
    return writer.environ;
  }
  const std::size_t end = cmdline.find(']');
  if (end == std::string_view::npos) {
    return writer.environ;
  }
  const std::string_view step = cmdline.substr(kTitle.size(), end - kTitle.size());
  const std::size_t dot = step.find('.');
  const std::string_view job = step.substr(0, dot);
  if (!IsSlurmId(job)) {
    return writer.environ;
  }
  std::string environ = "SLURM_JOB_ID=" + std::string(job) + '\0';
  if (dot != std::string_view::npos && step.size() - dot - 1 <= 32) {
    environ += "SLURM_STEP_ID=" + std::string(step.substr(dot + 1)) + '\0';
  }
  return environ + writer.environ;
}

std::string Hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) {
    return "unknown-host";
  }
  return name;
}

std::pair<std::string, std::string> NodeName(const config::ClusterConfig& cluster,
                                             std::string_view hostname) {
  if (!cluster.node_name.empty()) {
    return {cluster.node_name, "config"};
  }
  if (!cluster.node_name_env.empty()) {
    return {cluster.node_name_env, "NODE_NAME"};
  }
  return {std::string(hostname), "hostname"};
}

detect::JobIdentity IdentifyJob(const std::vector<std::string_view>& environs,
                                const config::ClusterConfig& cluster, std::string_view hostname,
                                const std::vector<std::optional<uid_t>>& uids) {
  detect::JobIdentity job;
  const std::size_t from = FindJobId(environs, cluster, job);
  if (!job.id.empty() && from < uids.size()) {
    job.uid = uids[from];
  }
  std::tie(job.node, job.node_from) = NodeName(cluster, hostname);
  std::set<int> ranks;
  for (const std::string_view environ : environs) {
    const collect::RankIdentity identity = collect::ParseRankIdentity(environ);
    if (!job.node_rank && identity.node_rank) {
      job.node_rank = identity.node_rank;
    }
    if (identity.rank) {
      ranks.insert(*identity.rank);
    }
  }
  job.ranks.assign(ranks.begin(), ranks.end());
  // The attempt: the id's own process says first (another job's restart count is not this
  // one's), then any.
  for (const char* variable : {"TORCHELASTIC_RESTART_COUNT", "SLURM_RESTART_COUNT"}) {
    std::string value =
        from < environs.size() ? collect::EnvironVariable(environs[from], variable) : "";
    if (value.empty()) {
      value = FirstSet(environs, variable);
    }
    if (!value.empty() && value.size() <= 16) {
      job.restart = std::string(variable) + "=" + value;
      break;
    }
  }
  if (job.id_from == "SLURM_JOB_ID" && from < environs.size()) {
    job.slurm_step = collect::EnvironVariable(environs[from], "SLURM_STEP_ID").substr(0, 32);
  }
  return job;
}

}  // namespace trainwatch::capture
