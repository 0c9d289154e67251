// What the ranks' stacks say a hang is, when they say it: the sentence a person needs, whose
// fault it is and what to do, and the ranks to blame.
//   - ranks in different collectives, or one from different call sites: a collective
//     mismatch (application): "rank 2 in broadcast at job.py:154 while ranks 0, 1, 3 in
//     all_reduce at job.py:157";
//   - a rank's main thread blocked acquiring a lock (CPython's lock acquire in its native
//     frames, or threading's acquire): a deadlock (application), "it already holds it" when
//     the function that takes it is on the stack twice;
//   - a rank waiting for its DataLoader workers (application);
//   - ranks waiting in the rendezvous (init_process_group) with fewer present than WORLD_SIZE:
//     the ones that never joined (infrastructure);
//   - a rank gone while its peers wait in a collective: that rank;
// A mismatch is said only of blocking collectives whose Python call sites every waiting rank
// shows (not a send or recv, not a native-only stack) and when no rank printed an error.
//   - every rank here in the same collective, none out of step, none gone, no error: the
//     network or a rank on another node (infrastructure).
// The first that applies decides. Pure; any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "diagnose/stack_rules.h"
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

// What is known of the job beside its stacks.
struct JobShape {
  std::optional<int> world_size;  // from the ranks' environment
  bool all_local = false;  // every rank of the job runs here (LOCAL_WORLD_SIZE == WORLD_SIZE)
  // Some rank printed an error of its own: a hang is then its consequence, and neither "all
  // waiting" nor a mismatch of where its peers were left is a verdict.
  bool error_printed = false;
};

// Whether a main thread's Python frames (innermost first) wait for a DataLoader's workers.
bool WaitsForDataLoader(const std::vector<collect::StackFrame>& python);

// `ranks` as Diagnose takes them (every rank of this node the capture saw, alive or not).
// `site_rules`, a site's stack rules, are tried first: the first that matches a living rank's
// main thread decides, its culprits every rank it matches.
std::optional<StackVerdict> JudgeStacks(const std::vector<RankState>& ranks, const JobShape& shape,
                                        const StackRules* site_rules = nullptr);

}  // namespace trainwatch::diagnose
