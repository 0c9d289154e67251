// Which ranks one capture covers: the map's live ranks up to capture.max_ranks (the others
// named in its notes), and the remembered writers that exited before the capture. Split from
// rank_capture.cpp, which calls these on the thread pool. No I/O; any thread.
#pragma once

#include <cstddef>
#include <vector>

#include "collect/process_tree.h"
#include "collect/rank_map.h"
#include "source/writers.h"

namespace trainwatch::capture {

// The remembered processes (writers, and the roster's ranks) that are gone now and had a rank
// of the same kind and run as the map's ranks, which none of those has: the ranks that exited
// (crashed, were killed) before the capture, with how they ended when known. One still in
// the tree but unreadable is exiting: gone too (else a rank that crashed a moment before the
// capture would be in neither list).
// With no numbered rank in the map, the newest remembered rank anchors the run, but with
// rankless writers in the map (a launching script) only one that is among `seeds` (the
// capture's own processes: this incident's writers) or in the map: a rank of the same user's
// earlier job, remembered for hours, must not stand in for a plain script's.
std::vector<collect::RankProcess> ExitedRanks(const std::vector<source::WriterProcess>& remembered,
                                              const collect::ProcessTree& tree,
                                              const collect::RankMap& map,
                                              const std::vector<int>& seeds = {});

// Takes out of the map the processes it holds without a rank number that `exited` names: a
// rank exiting at the capture (its environment already unreadable) is in the map as a
// writer of unknown rank, and in `exited` with the rank its remembered environment gave.
void ForgetRanklessNamedExited(collect::RankMap& map,
                               const std::vector<collect::RankProcess>& exited);

// Keeps the first `max_ranks` of the map's ranks and names the others in its notes: a job of
// hundreds of processes on a node (or a user's fork bomb posing as ranks) must not hold the
// capture, and every later capture, for minutes. REQUIRES: the ranks in RankMap's order (by
// rank, those without one last), as BuildRankMap returns them.
void SkipRanksPastTheCap(collect::RankMap& map, std::size_t max_ranks);

}  // namespace trainwatch::capture
