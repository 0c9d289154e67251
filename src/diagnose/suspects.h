// The suspect ranks of a hang or a crash: the ranks grouped by where their main thread is
// ("ranks 0-2: all_reduce at train.py:88; rank 3: sleep at data.py:41"), and those that differ
// named with the reason — outside a collective while its peers wait in one, a stack unlike the
// majority's, busy while its peers sit idle, gone, the first to print an error, ahead of or
// behind its peers' progress. Pure; any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collect/stack_text.h"

namespace trainwatch::diagnose {

// What is known of one rank at the moment of capture.
// A child process of a rank (a DataLoader worker): its main thread's Python frames.
struct WorkerStack {
  int pid = 0;
  std::vector<collect::StackFrame> python;  // innermost first
};

struct RankState {
  std::string label;  // "rank 3", or "pid 4242" when its rank is unknown
  std::optional<int> rank;
  int pid = 0;
  bool alive = true;
  std::vector<collect::StackFrame> python;  // its main thread, innermost first; empty: unknown
  std::vector<collect::StackFrame> native;  // the same, native
  std::optional<double> cpu_percent;        // over the sampling window; nullopt: unknown
  std::string exit_cause;  // when gone: how it ended, when known ("killed by signal 9 ...")
  std::vector<WorkerStack> workers;  // taken when it waits for its DataLoader's workers
  // Its main thread's states sampled over the window, by collect::WaitKey ("futex_do_wait",
  // "running"): how many samples fell on each. Empty: not sampled.
  std::map<std::string, int> waits;
};

struct RankGroup {
  std::vector<std::string> labels;  // in rank order
  std::string where;                // "all_reduce at train.py:88", "no stack", "exited"
  bool in_collective = false;
};

struct Suspect {
  std::string label;
  std::optional<int> rank;
  int pid = 0;
  std::string reason;
};

struct RankDiagnosis {
  std::vector<RankGroup> groups;  // the largest first
  std::vector<Suspect> suspects;
  // One line for logs and status: "ranks 0-2: all_reduce at hang.py:9; rank 3: sleep at
  // hang.py:8".
  std::string Summary() const;
};

// A progress bar of one rank, as the daemon last saw it: one that names its rank in its prefix
// ("[rank3]: Epoch 0: 45%|..."), or the bar of a stream whose writers include the rank's
// process (a log file per rank).
struct RankProgress {
  std::optional<int> rank;  // from the bar's prefix
  std::vector<int> pids;    // else the writers of its stream
  std::string bar;          // the bar's key, its rank's digits included
  std::int64_t count = 0;
  // How long before the capture the bar last advanced; nullopt when it never did.
  std::optional<double> seconds_since_advance;
};

struct StackRule;  // diagnose/stack_rules.h

// What the daemon's streams say of the ranks, beside their stacks.
struct JobClues {
  std::optional<int> first_error_rank;  // the rank that printed the root error, when known
  // The rank the job's own straggler report names slowest (Megatron's, NVIDIA's resiliency
  // extension's), when a slow firing named one.
  std::optional<int> reported_straggler;
  bool error_printed = false;  // some rank printed an error of its own (a crash)
  // The ranks printed errors, all of them consequences of another's failure ("Connection
  // closed by peer"): the failure is elsewhere (another node), and these ranks' exits and
  // teardown stacks name no one here.
  bool consequences_only = false;
  std::vector<RankProgress> progress;
  // The site's stack rules (diagnose/stack_rules.h), tried before the built-in verdicts.
  std::shared_ptr<const std::vector<StackRule>> stack_rules;
};

// A file of a library (site-packages, the standard library, frozen modules), not the job's
// own code; an empty file (a built-in) counts as one.
bool IsLibraryFile(const std::string& file);
// The file name of a path.
std::string Basename(const std::string& file);

// Where a stack is, in a few words: the call the innermost frame of the job's own code makes
// ("all_reduce at train.py:88"), the library frames inside it left out.
std::string DescribeStack(const std::vector<collect::StackFrame>& python,
                          const std::vector<collect::StackFrame>& native);
// Whether the stack waits in a collective: torch.distributed's Python API, or c10d, gloo,
// NCCL, HCCL in the native frames.
bool InCollective(const std::vector<collect::StackFrame>& python,
                  const std::vector<collect::StackFrame>& native);

RankDiagnosis Diagnose(const std::vector<RankState>& ranks, const JobClues& clues = {});

// The rank a log line names in the prefix its launcher put there: torchrun's "[rank3]:" and
// "[default3]:", mpirun --tag-output's "[1,3]<stderr>:", srun --label's "3: ".
std::optional<int> RankOfLine(std::string_view line);

// "ranks 0-2, 5" / "rank 3" / "pid 4242, pid 4243".
std::string JoinLabels(const std::vector<std::string>& labels);

}  // namespace trainwatch::diagnose
