#include "capture/job_identity.h"

#include <unistd.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "collect/rank_identity.h"

namespace trainwatch::capture {
namespace {

// The first environment that sets `variable` (to something other than torchrun's "none").
std::string FirstSet(const std::vector<std::string_view>& environs, std::string_view variable) {
  for (const std::string_view environ : environs) {
    std::string value = collect::EnvironVariable(environ, variable);
    if (!value.empty() && !(variable == "TORCHELASTIC_RUN_ID" && value == "none")) {
      return value;
    }
  }
  return {};
}

void FindJobId(const std::vector<std::string_view>& environs, const config::ClusterConfig& cluster,
               detect::JobIdentity& job) {
  if (!cluster.job_id.empty()) {
    job.id = cluster.job_id;
    job.id_from = "config";
    return;
  }
  std::vector<std::string> variables = cluster.job_id_variables;
  variables.insert(variables.end(), std::begin(kJobIdVariables), std::end(kJobIdVariables));
  for (const std::string& variable : variables) {
    if (std::string value = FirstSet(environs, variable); !value.empty()) {
      job.id = std::move(value);
      job.id_from = variable;
      return;
    }
  }
  const std::string addr = FirstSet(environs, "MASTER_ADDR");
  const std::string port = FirstSet(environs, "MASTER_PORT");
  if (!addr.empty() && !port.empty()) {
    job.id = addr + ":" + port;
    job.id_from = "MASTER_ADDR:MASTER_PORT";
  }
}

}  // namespace

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
                                const config::ClusterConfig& cluster, std::string_view hostname) {
  detect::JobIdentity job;
  FindJobId(environs, cluster, job);
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
  return job;
}

}  // namespace trainwatch::capture
