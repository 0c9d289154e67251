// The rank map: which processes are the ranks of the job, found from the processes the daemon
// already knows (the writers of the watched logs, the wrapped command, capture.process_pattern)
// by walking their launchers (torchrun's elastic agent, mp.spawn's parent, deepspeed, mpirun,
// srun) down to the rank processes, and who each rank is (rank_identity.h). Blocking (reads
// /proc); any thread.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "collect/process_tree.h"
#include "collect/rank_identity.h"

namespace trainwatch::collect {

struct RankProcess {
  pid_t pid = 0;
  std::optional<int> rank;  // from the environment, or mp.spawn's start order
  std::string rank_source;  // "RANK", "OMPI_COMM_WORLD_RANK", "spawn order"; empty: unknown
  RankIdentity identity;
  std::string comm;
  std::string cmdline;     // arguments joined by spaces
  std::string environ;     // raw, NUL-separated (redacted where it is written out)
  pid_t launcher = 0;      // the process it was started under, when that is a launcher
  std::string exit_cause;  // how it ended, once gone and when known: "killed by signal 9 ..."
  std::string label() const { return RankLabel(rank, pid); }
};

struct RankMap {
  std::vector<RankProcess> ranks;  // by rank, the unknown ones last by pid
  std::vector<pid_t> launchers;
  std::vector<std::string> notes;  // what could not be read: "pid 12: environ: Permission denied"
  // Processes in the tree whose environment could not be read: most often one exiting (its
  // memory already gone, ESRCH), which a remembered rank is then taken to have done.
  std::vector<pid_t> unreadable;
};

// Whether `cmdline` (arguments joined by spaces) is that of a launcher of ranks.
bool IsLauncherCommand(const std::string& cmdline);

// The ranks among `seeds` and the processes around them in `tree`:
// - a seed that is a rank's launcher (or under one, or an mp.spawn child) brings the
//   launcher's whole tree in;
// - the ranks are the processes with a rank variable (the most specific source present wins:
//   torchrun's RANK over the SLURM_PROCID of the agent above it), less those under a process
//   of the same rank (DataLoader workers inherit their rank's environment);
// - failing that, mp.spawn's children (`--multiprocessing-fork`), numbered in start order;
// - failing that, the seeds themselves, rank unknown.
RankMap BuildRankMap(const std::vector<pid_t>& seeds, const ProcessTree& tree,
                     const std::string& proc_root = "/proc");

// The rank map of `seeds` and the processes `process_pattern` matches (empty: none), from
// /proc as it is now.
RankMap MapRanks(std::vector<pid_t> seeds, const std::string& process_pattern,
                 const std::string& proc_root = "/proc");

}  // namespace trainwatch::collect
