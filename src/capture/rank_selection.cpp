#include "capture/rank_selection.h"

#include <algorithm>
#include <optional>
#include <string>

#include "collect/process_collectors.h"
#include "collect/rank_identity.h"

namespace trainwatch::capture {
namespace {

// Whether a remembered rank was of the same run as the live ones: the same kind of rank
// number, and the same run id, master and Slurm job where both say (an old job's rank 3,
// gone an hour ago, is not the new job's missing rank 3).
bool SameRun(const collect::RankIdentity& live, const collect::RankIdentity& gone,
             const std::string& live_source) {
  auto differ = [](const std::string& a, const std::string& b) {
    return !a.empty() && !b.empty() && a != b;
  };
  return live_source == gone.rank_source && !differ(live.run_id, gone.run_id) &&
         !differ(live.master, gone.master) && !differ(live.slurm_job, gone.slurm_job);
}

}  // namespace

std::vector<collect::RankProcess> ExitedRanks(const std::vector<source::WriterProcess>& remembered,
                                              const collect::ProcessTree& tree,
                                              const collect::RankMap& map,
                                              const std::vector<int>& seeds) {
  std::vector<collect::RankProcess> exited;
  // The run the exited ranks must share: the live ranks'; with none alive, the newest
  // remembered rank's (the highest pid: the latest attempt), so that an earlier attempt's or
  // another job's ranks, remembered for hours, never stand in for this one's.
  // A map without a numbered rank (only the writers it fell back on: the script that
  // launched the ranks, one exiting) anchors nothing itself: its empty rank source matches no
  // rank.
  std::optional<std::pair<collect::RankIdentity, std::string>> anchor;
  if (!map.ranks.empty() && map.ranks.front().rank) {
    anchor.emplace(map.ranks.front().identity, map.ranks.front().rank_source);
  } else {
    pid_t newest = 0;
    auto ours = [&](pid_t pid) {
      return map.ranks.empty() || std::find(seeds.begin(), seeds.end(), pid) != seeds.end() ||
             std::any_of(map.ranks.begin(), map.ranks.end(),
                         [&](const collect::RankProcess& live) { return live.pid == pid; });
    };
    for (const source::WriterProcess& writer : remembered) {
      collect::RankIdentity identity = collect::ParseRankIdentity(writer.environ);
      if (identity.rank && writer.pid > newest && ours(writer.pid)) {
        newest = writer.pid;
        std::string source = identity.rank_source;
        anchor.emplace(std::move(identity), std::move(source));
      }
    }
    if (!anchor && !map.ranks.empty()) {
      return exited;  // rankless writers here, none of this capture's ranks remembered
    }
  }
  for (const source::WriterProcess& writer : remembered) {
    const collect::RankIdentity identity = collect::ParseRankIdentity(writer.environ);
    const bool exiting =
        std::find(map.unreadable.begin(), map.unreadable.end(), writer.pid) != map.unreadable.end();
    if ((tree.Find(writer.pid) != nullptr && !exiting) || !identity.rank ||
        (anchor && !SameRun(anchor->first, identity, anchor->second))) {
      continue;
    }
    auto same_rank = [&](const collect::RankProcess& other) { return other.rank == identity.rank; };
    if (std::any_of(map.ranks.begin(), map.ranks.end(), same_rank) ||
        std::any_of(exited.begin(), exited.end(), same_rank)) {
      continue;
    }
    collect::RankProcess process;
    process.pid = writer.pid;
    process.rank = identity.rank;
    process.rank_source = identity.rank_source;
    process.identity = identity;
    process.comm = writer.comm;
    process.cmdline = collect::JoinCmdline(writer.cmdline, /*quote=*/false);
    process.environ = writer.environ;
    process.exit_cause = writer.exit_cause;
    exited.push_back(std::move(process));
  }
  return exited;
}

void ForgetRanklessNamedExited(collect::RankMap& map,
                               const std::vector<collect::RankProcess>& exited) {
  std::erase_if(map.ranks, [&](const collect::RankProcess& live) {
    return !live.rank &&
           std::any_of(exited.begin(), exited.end(),
                       [&](const collect::RankProcess& gone) { return gone.pid == live.pid; });
  });
}

void SkipRanksPastTheCap(collect::RankMap& map, std::size_t max_ranks) {
  if (map.ranks.size() <= max_ranks) {
    return;
  }
  std::string skipped;
  for (std::size_t i = max_ranks; i < map.ranks.size(); ++i) {
    if (i - max_ranks < 16) {
      const collect::RankProcess& rank = map.ranks[i];
      skipped += (skipped.empty() ? "" : ", ") +
                 (rank.rank ? "rank " + std::to_string(*rank.rank) : std::string("a process")) +
                 " (pid " + std::to_string(rank.pid) + ")";
    }
  }
  const std::size_t over = map.ranks.size() - max_ranks;
  map.notes.push_back(std::to_string(over) + " of " + std::to_string(map.ranks.size()) +
                      " ranks not captured, past capture.max_ranks (" + std::to_string(max_ranks) +
                      "): " + skipped + (over > 16 ? ", ..." : ""));
  map.ranks.resize(max_ranks);
}

}  // namespace trainwatch::capture
