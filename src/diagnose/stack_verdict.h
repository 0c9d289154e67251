// What the ranks' stacks say a hang is, when they say it: the sentence a person needs, whose
// fault it is and what to do, and the ranks to blame.
//   - ranks in different collectives, or one from different call sites: a collective
//     mismatch (application): "rank 2 in broadcast at job.py:154 while ranks 0, 1, 3 in
//     all_reduce at job.py:157";
//   - a rank's main thread blocked acquiring a lock (CPython's lock acquire in its native
//     frames, or threading's acquire): a deadlock (application), "it already holds it" when
//     the function that takes it is on the stack twice;
//   - a rank waiting for its DataLoader workers (application);
//   - ranks waiting in the rendezvous with fewer present than WORLD_SIZE: the ones that never
//     joined (infrastructure);
//   - a rank gone while its peers wait in a collective: that rank;
//   - every rank here in the same collective, none out of step, none gone, no error: the
//     network or a rank on another node (infrastructure).
// The first that applies decides. Pure; any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "diagnose/suspects.h"
#include "rules/verdict.h"

namespace trainwatch::diagnose {

struct StackVerdict {
  std::string kind;  // "collective_mismatch", "deadlock", "dataloader", "rendezvous",
                     // "rank_gone", "all_waiting"
  rules::Verdict verdict;
  std::string says;                   // the sentence
  std::vector<std::string> culprits;  // labels, in rank order; empty: nobody here
};

// `ranks` as Diagnose takes them (every rank of this node the capture saw, alive or not);
// `world_size` when the ranks' environment says it; `error_printed`: some rank printed an
// error of its own (then a hang is its consequence, and "all waiting" is no verdict).
std::optional<StackVerdict> JudgeStacks(const std::vector<RankState>& ranks,
                                        std::optional<int> world_size, bool error_printed);

}  // namespace trainwatch::diagnose
