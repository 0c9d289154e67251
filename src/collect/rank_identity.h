// Who a training process is in its job, from the environment its launcher gave it: the
// variables torchrun/torchelastic, Open MPI, MPICH/Intel MPI (PMI) and Slurm set, and the
// accelerators it was bound to. Pure; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainwatch::collect {

struct RankIdentity {
  std::optional<int> rank;
  std::string rank_source;  // the variable the rank came from: "RANK", "OMPI_COMM_WORLD_RANK"...
  std::optional<int> local_rank;
  std::optional<int> world_size;
  std::optional<int> local_world_size;  // this node's share: LOCAL_WORLD_SIZE and the like
  std::optional<int> node_rank;         // GROUP_RANK, NODE_RANK, SLURM_NODEID
  std::string run_id;                   // TORCHELASTIC_RUN_ID
  std::string master;                   // MASTER_ADDR:MASTER_PORT
  std::string slurm_job;                // SLURM_JOB_ID
  // The accelerator binding as set: {"HABANA_VISIBLE_MODULES", "0,1"}, {"CUDA_VISIBLE_DEVICES",
  // "3"}; empty when none of those is set.
  std::vector<std::pair<std::string, std::string>> devices;
};

// Where a rank's number may come from, most specific first: a process with RANK set and
// SLURM_PROCID too is torchrun's rank, SLURM_PROCID being its node's task.
inline constexpr const char* kRankVariables[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                                 "PMIX_RANK", "SLURM_PROCID"};

// The value of `name` in `environ` (NUL-separated NAME=value entries, as /proc/PID/environ
// holds them); empty when it is not set.
std::string EnvironVariable(std::string_view environ, std::string_view name);

// The rank alone, as ParseRankIdentity takes it, in one pass and no allocation: what a firing's
// writer is asked for each firing.
std::optional<int> RankInEnviron(std::string_view environ);

// The identity in `environ`: NAME=value entries each ended by a NUL, as /proc/PID/environ
// holds them. Values that are not numbers where numbers belong are left out.
RankIdentity ParseRankIdentity(std::string_view environ);

// The rank of `source` ranks before that of another source: the index in kRankVariables.
int RankSourcePriority(const std::string& source);

// "rank 3", or "pid 4242" for a process whose rank is unknown.
std::string RankLabel(const std::optional<int>& rank, int pid);

}  // namespace trainwatch::collect
