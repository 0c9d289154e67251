#include "diagnose/stack_verdict.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

namespace trainwatch::diagnose {
namespace {

using collect::StackFrame;

bool FileEndsWith(const StackFrame& frame, std::string_view tail) {
  return frame.file.size() >= tail.size() &&
         frame.file.compare(frame.file.size() - tail.size(), tail.size(), tail) == 0;
}

bool IsOwnCode(const StackFrame& frame) { return !IsLibraryFile(frame.file); }

// The frame of the job's own code whose lock its main thread waits to acquire, or null. A
// `with lock:` or `lock.acquire()` blocks in C: py-bt shows the built-in `__enter__` or
// `acquire` right above the job's frame, or no frame (CPython's lock acquire is then in the
// native frames). Not a queue's or an event's wait, nor a join: those wait on a condition
// inside the library, which is no deadlock by itself.
const StackFrame* LockTaker(const RankState& rank) {
  std::size_t at = 0;
  bool builtin_acquire = false;
  if (!rank.python.empty() && rank.python.front().file.empty() &&
      (rank.python.front().function == "__enter__" || rank.python.front().function == "acquire")) {
    builtin_acquire = true;
    at = 1;
  }
  if (at >= rank.python.size() || !IsOwnCode(rank.python[at])) {
    return nullptr;
  }
  const bool c_acquire =
      std::any_of(rank.native.begin(), rank.native.end(), [](const StackFrame& frame) {
        return frame.function.find("PyThread_acquire_lock") != std::string::npos ||
               frame.function == "acquire_timed" ||
               frame.function == "lock_PyThread_acquire_lock" || frame.function == "rlock_acquire";
      });
  return builtin_acquire || c_acquire ? &rank.python[at] : nullptr;
}

// The worker stuck in the job's own code (the dataset's __getitem__), as "worker pid 812 is in
// __getitem__ at data.py:41"; empty when every worker waits inside the library (idle, waiting
// for indices: then the main process is what is stuck) or none was taken.
std::string StuckWorker(const RankState& rank) {
  for (const WorkerStack& worker : rank.workers) {
    for (const StackFrame& frame : worker.python) {
      if (frame.function == "_worker_loop") {
        break;  // below it: the parent's frames a forked worker inherited, not its work
      }
      if (!frame.file.empty() && !IsLibraryFile(frame.file) && !frame.file.starts_with("<")) {
        return "worker pid " + std::to_string(worker.pid) + " is in " + frame.function + " at " +
               Basename(frame.file) + ":" + std::to_string(frame.line);
      }
    }
  }
  return {};
}

bool InRendezvous(const RankState& rank) {
  for (const StackFrame& frame : rank.python) {
    if (frame.file.find("torch/distributed/") == std::string::npos) {
      continue;
    }
    // Not _store_based_barrier alone: new_group() waits there too, mid-training, where a group
    // created on only some ranks is the job's own mistake.
    for (const char* function : {"init_process_group", "next_rendezvous", "rendezvous",
                                 "_tcp_rendezvous_handler", "_env_rendezvous_handler"}) {
      if (frame.function == function) {
        return true;
      }
    }
  }
  return false;
}

// A point-to-point wait (send, recv): one peer, by design.
bool PointToPoint(const RankState& rank) {
  for (const StackFrame& frame : rank.python) {
    if ((frame.function == "send" || frame.function == "recv" || frame.function == "isend" ||
         frame.function == "irecv" || frame.function == "batch_isend_irecv") &&
        frame.file.find("torch/distributed/") != std::string::npos) {
      return true;
    }
  }
  return false;
}

std::string Where(const RankState& rank) { return DescribeStack(rank.python, rank.native); }

std::string Verb(const std::vector<std::string>& labels, const char* one, const char* many) {
  return labels.size() == 1 ? one : many;
}

}  // namespace

bool WaitsForDataLoader(const std::vector<StackFrame>& python) {
  return std::any_of(python.begin(), python.end(), [](const StackFrame& frame) {
    return (frame.function == "_try_get_data" || frame.function == "_get_data" ||
            frame.function == "_next_data") &&
           FileEndsWith(frame, "torch/utils/data/dataloader.py");
  });
}

std::optional<StackVerdict> JudgeStacks(const std::vector<RankState>& ranks, const JobShape& shape,
                                        const StackRules* site_rules) {
  for (const StackRule& rule : site_rules != nullptr ? *site_rules : StackRules{}) {
    std::optional<StackVerdict> verdict;
    for (const RankState& rank : ranks) {
      const StackFrame* frame = rank.alive ? MatchStackRule(rule, rank.python) : nullptr;
      if (frame == nullptr) {
        continue;
      }
      if (!verdict) {
        verdict = StackVerdict{rule.id, rule.verdict, StackRuleSays(rule, rank.label, *frame), {}};
      }
      verdict->culprits.push_back(rank.label);
    }
    if (verdict) {
      return verdict;
    }
  }
  std::vector<const RankState*> alive;
  std::vector<std::string> gone;
  std::vector<std::string> causes;  // "rank 3 (killed by signal 9 (SIGKILL))"
  for (const RankState& rank : ranks) {
    if (rank.alive) {
      alive.push_back(&rank);
    } else {
      gone.push_back(rank.label);
      if (!rank.exit_cause.empty()) {
        causes.push_back(rank.label + ": " + rank.exit_cause);
      }
    }
  }
  if (alive.empty()) {
    return std::nullopt;
  }
  for (const RankState* rank : alive) {
    if (WaitsForDataLoader(rank->python)) {
      const std::string stuck = StuckWorker(*rank);
      return StackVerdict{
          "dataloader",
          {rules::Cause::kApplication, rules::Action::kInspect},
          rank->label + " waits for its DataLoader workers (" + Where(*rank) + "): " +
              (stuck.empty() ? "a worker is stuck in the dataset's __getitem__ or died" : stuck),
          {rank->label}};
    }
  }
  // A deadlock: a rank's main thread waits for a lock, outside any collective.
  for (const RankState* rank : alive) {
    const StackFrame* taker = LockTaker(*rank);
    if (taker == nullptr || InCollective(rank->python, rank->native)) {
      continue;
    }
    StackVerdict verdict{
        "deadlock", {rules::Cause::kApplication, rules::Action::kInspect}, "", {rank->label}};
    verdict.says = "deadlock: " + rank->label + "'s main thread waits for a lock in " +
                   taker->function + " at " + Basename(taker->file) + ":" +
                   std::to_string(taker->line);
    const auto takers =
        std::count_if(rank->python.begin(), rank->python.end(), [&](const StackFrame& frame) {
          return frame.function == taker->function && frame.file == taker->file;
        });
    if (takers > 1) {
      verdict.says += " that it already holds (" + taker->function + " is on its stack twice)";
    }
    return verdict;
  }
  // The rendezvous: ranks waiting in init_process_group for the others to join.
  std::vector<std::string> meeting;
  for (const RankState* rank : alive) {
    if (InRendezvous(*rank)) {
      meeting.push_back(rank->label);
    }
  }
  if (!meeting.empty() && shape.world_size && static_cast<int>(ranks.size()) < *shape.world_size) {
    std::string says =
        JoinLabels(meeting) + Verb(meeting, " waits", " wait") + " in the rendezvous; ";
    if (shape.all_local) {
      std::set<int> present;
      for (const RankState& rank : ranks) {
        if (rank.rank) {
          present.insert(*rank.rank);
        }
      }
      std::vector<std::string> missing;
      for (int r = 0; r < *shape.world_size && missing.size() < 16; ++r) {
        if (!present.contains(r)) {
          missing.push_back("rank " + std::to_string(r));
        }
      }
      says += JoinLabels(missing) + " of " + std::to_string(*shape.world_size) +
              " never joined (not started by the launcher, or gone before it joined)";
    } else {
      says += std::to_string(ranks.size()) + " of the job's " + std::to_string(*shape.world_size) +
              " ranks are here: the others, on other nodes, have not joined (not started, or "
              "they cannot reach this one)";
    }
    return StackVerdict{
        "rendezvous", {rules::Cause::kInfrastructure, rules::Action::kRetry}, std::move(says), {}};
  }
  // Collectives: who waits where. Only blocking collectives seen in Python count: a send or
  // recv waits for one peer by design, and a stack seen only natively cannot tell its call site.
  std::map<std::string, std::vector<std::string>> waiting;  // where -> labels
  std::vector<std::string> outside;
  bool unsure = false;  // a rank in a collective whose call site the stacks do not tell
  for (const RankState* rank : alive) {
    if (!InCollective(rank->python, rank->native)) {
      outside.push_back(rank->label);
    } else if (rank->python.empty() || PointToPoint(*rank) || !InCollective(rank->python, {})) {
      // Its native stack (eu-stack's, taken before gdb's Python one) says collective, its
      // Python stack does not: the two moments differ, and the call site is not known.
      unsure = true;
    } else {
      waiting[Where(*rank)].push_back(rank->label);
    }
  }
  if (!gone.empty() && !waiting.empty()) {
    const auto& [where, labels] = *waiting.begin();
    return StackVerdict{"rank_gone",
                        {rules::Cause::kUnknown, rules::Action::kInspect},
                        JoinLabels(gone) + Verb(gone, " is gone", " are gone") +
                            (causes.empty() ? "" : fmt::format(" ({})", fmt::join(causes, "; "))) +
                            " while " + JoinLabels(labels) + Verb(labels, " waits", " wait") +
                            " in " + where,
                        gone};
  }
  if (waiting.size() > 1 && !unsure && !shape.error_printed) {
    // The largest group is the norm; the others called another collective, or the same one
    // from elsewhere. After a rank's own error, waits are where its failure left its peers.
    auto norm = std::max_element(waiting.begin(), waiting.end(), [](const auto& a, const auto& b) {
      return a.second.size() < b.second.size();
    });
    const bool tied = std::count_if(waiting.begin(), waiting.end(), [&](const auto& group) {
                        return group.second.size() == norm->second.size();
                      }) > 1;
    StackVerdict verdict{"collective_mismatch",
                         {rules::Cause::kApplication, rules::Action::kInspect},
                         "collective mismatch: ",
                         {}};
    bool first = true;
    for (const auto& [where, labels] : waiting) {
      if (!tied && where == norm->first) {
        continue;
      }
      verdict.says += (first ? "" : "; ") + JoinLabels(labels) + " in " + where;
      first = false;
      if (!tied) {
        verdict.culprits.insert(verdict.culprits.end(), labels.begin(), labels.end());
      }
    }
    if (!tied) {
      verdict.says += " while " + JoinLabels(norm->second) + " in " + norm->first;
    }
    return verdict;
  }
  if (waiting.size() == 1 && outside.empty() && gone.empty() && !unsure && !shape.error_printed) {
    const auto& [where, labels] = *waiting.begin();
    return StackVerdict{
        "all_waiting",
        {rules::Cause::kInfrastructure, rules::Action::kRetry},
        "every rank here (" + JoinLabels(labels) + ") waits in " + where +
            ", none out of step and none gone: the network, or a rank on another node",
        {}};
  }
  return std::nullopt;
}

}  // namespace trainwatch::diagnose
