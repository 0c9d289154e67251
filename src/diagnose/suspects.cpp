#include "diagnose/suspects.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "diagnose/wait_straggler.h"

namespace trainwatch::diagnose {
namespace {

constexpr double kBusyPercent = 50;  // a rank this busy...
constexpr double kIdlePercent = 10;  // ...while every peer is at most this, is suspect

std::string Percent(double value) {
  return std::to_string(static_cast<int>(std::lround(value))) + "%";
}

}  // namespace

bool IsLibraryFile(const std::string& file) {
  return file.empty() || file.find("/site-packages/") != std::string::npos ||
         file.find("/dist-packages/") != std::string::npos ||
         file.find("/lib/python3") != std::string::npos || file.rfind("<frozen", 0) == 0;
}

std::string Basename(const std::string& file) {
  const std::size_t slash = file.rfind('/');
  return slash == std::string::npos ? file : file.substr(slash + 1);
}

std::string DescribeStack(const std::vector<collect::StackFrame>& python,
                          const std::vector<collect::StackFrame>& native) {
  for (std::size_t i = 0; i < python.size(); ++i) {
    if (IsLibraryFile(python[i].file)) {
      continue;
    }
    const std::string at = Basename(python[i].file) + ":" + std::to_string(python[i].line);
    if (i == 0) {
      return "in " + python[i].function + " at " + at;
    }
    return python[i - 1].function + " at " + at;
  }
  if (!python.empty()) {  // library frames only (a launcher, a worker thread)
    const collect::StackFrame& top = python.front();
    return top.file.empty()
               ? top.function
               : top.function + " at " + Basename(top.file) + ":" + std::to_string(top.line);
  }
  // Native only: the first frame that is not the C library's waiting.
  for (const collect::StackFrame& frame : native) {
    if (frame.function != "??" && frame.function.rfind("__", 0) != 0 &&
        frame.function.find("pthread_") == std::string::npos) {
      return frame.function + " (native)";
    }
  }
  return native.empty() ? "no stack" : native.front().function + " (native)";
}

bool InCollective(const std::vector<collect::StackFrame>& python,
                  const std::vector<collect::StackFrame>& native) {
  static const std::set<std::string> kCollectives = {"all_reduce",
                                                     "all_gather",
                                                     "all_gather_into_tensor",
                                                     "_all_gather_base",
                                                     "all_to_all",
                                                     "all_to_all_single",
                                                     "broadcast",
                                                     "barrier",
                                                     "monitored_barrier",
                                                     "reduce",
                                                     "reduce_scatter",
                                                     "reduce_scatter_tensor",
                                                     "_reduce_scatter_base",
                                                     "gather",
                                                     "scatter",
                                                     "send",
                                                     "recv",
                                                     "isend",
                                                     "irecv",
                                                     "all_gather_object",
                                                     "broadcast_object_list"};
  for (const collect::StackFrame& frame : python) {
    if (kCollectives.count(frame.function) != 0 &&
        frame.file.find("distributed") != std::string::npos) {
      return true;
    }
  }
  for (const collect::StackFrame& frame : native) {
    for (const char* marker : {"c10d::", "gloo::", "nccl", "hccl", "ProcessGroup"}) {
      if (frame.function.find(marker) != std::string::npos) {
        return true;
      }
    }
  }
  return false;
}

std::string JoinLabels(const std::vector<std::string>& labels) {
  // Consecutive ranks collapse into a range; anything else is listed.
  std::vector<int> ranks;
  std::vector<std::string> others;
  for (const std::string& label : labels) {
    if (label.rfind("rank ", 0) == 0) {
      ranks.push_back(std::stoi(label.substr(5)));
    } else {
      others.push_back(label);
    }
  }
  std::sort(ranks.begin(), ranks.end());
  std::string text;
  if (!ranks.empty()) {
    text = ranks.size() == 1 ? "rank " : "ranks ";
    for (std::size_t i = 0; i < ranks.size();) {
      std::size_t j = i;
      while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) {
        ++j;
      }
      if (i > 0) {
        text += ", ";
      }
      text += std::to_string(ranks[i]);
      if (j > i) {
        text += j == i + 1 ? ", " : "-";
        text += std::to_string(ranks[j]);
      }
      i = j + 1;
    }
  }
  for (const std::string& other : others) {
    text += text.empty() ? "" : ", ";
    text += other;
  }
  return text;
}

std::string RankDiagnosis::Summary() const {
  std::string text;
  for (const RankGroup& group : groups) {
    if (!text.empty()) {
      text += "; ";
    }
    text += JoinLabels(group.labels) + ": " + group.where;
  }
  return text;
}

std::optional<int> RankOfLine(std::string_view line) {
  static const RE2 kPrefix(
      R"(^(?:\[(?:rank|default)(\d+)\]:|\[\d+,(\d+)\]<std(?:out|err)>:|(\d+): ))");
  std::string torchrun;
  std::string mpirun;
  std::string srun;
  if (!RE2::PartialMatch(line, kPrefix, &torchrun, &mpirun, &srun)) {
    return std::nullopt;
  }
  const std::string& digits = !torchrun.empty() ? torchrun : !mpirun.empty() ? mpirun : srun;
  return digits.size() <= 6 ? std::optional<int>(std::stoi(digits)) : std::nullopt;
}

namespace {

// The bars of ranks compared with each other: one key for every rank's copy of a bar
// ("tqdm:[rank#]: Epoch #").
std::string BarShape(std::string_view key) {
  std::string shape;
  for (char c : key) {
    if (c < '0' || c > '9') {
      shape += c;
    } else if (shape.empty() || shape.back() != '#') {
      shape += '#';
    }
  }
  return shape;
}

// Why a rank's progress sets it apart, per index of `ranks`: the one bar most ranks show,
// compared rank by rank. The count most ranks reached is the norm (when there is no such
// count, the highest is the odd one out): a rank past it went on after its peers stopped (it
// skipped the collective they wait in, or they wait for it); a rank short of it stopped first.
// Who stopped first, from when each rank's bar last advanced: the rank whose bar stopped well
// before every peer's (by kStoppedFirstGap, and by twice the spread of the peers' own last
// advances) is named; any other spread is a tie and names nobody. nullopt when some rank's bar
// never advanced: then the counts decide.
constexpr double kStoppedFirstGap = 10;  // seconds
std::optional<std::map<std::size_t, std::string>> StoppedFirst(
    const std::map<std::size_t, std::int64_t>& counts, const std::map<std::size_t, double>& since) {
  if (since.size() != counts.size() || since.size() < 2) {
    return std::nullopt;
  }
  std::vector<std::pair<double, std::size_t>> order;  // longest since first
  order.reserve(since.size());
  for (const auto& [index, seconds] : since) {
    order.emplace_back(seconds, index);
  }
  std::sort(order.rbegin(), order.rend());
  const double gap = order[0].first - order[1].first;
  const double spread = order[1].first - order.back().first;
  std::map<std::size_t, std::string> reasons;
  if (gap >= kStoppedFirstGap && gap >= 2 * spread) {
    reasons[order[0].second] =
        fmt::format("the first to stop (its bar last moved {:.0f} s before any peer's, at {})", gap,
                    counts.at(order[0].second));
  }
  return reasons;
}

std::map<std::size_t, std::string> ProgressReasons(const std::vector<RankState>& ranks,
                                                   const std::vector<RankProgress>& progress) {
  // shape -> rank index -> count, and how long ago its bar last advanced
  std::map<std::string, std::map<std::size_t, std::int64_t>> counts;
  std::map<std::string, std::map<std::size_t, double>> since;
  for (const RankProgress& bar : progress) {
    std::vector<std::size_t> owners;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      const bool named =
          bar.rank ? ranks[i].rank == bar.rank
                   : std::find(bar.pids.begin(), bar.pids.end(), ranks[i].pid) != bar.pids.end();
      if (named) {
        owners.push_back(i);
      }
    }
    if (owners.size() == 1) {  // a stream several ranks write tells nothing of one
      counts[BarShape(bar.bar)][owners[0]] = bar.count;
      if (bar.seconds_since_advance) {
        since[BarShape(bar.bar)][owners[0]] = *bar.seconds_since_advance;
      }
    }
  }
  const std::map<std::size_t, std::int64_t>* widest = nullptr;
  const std::string* widest_shape = nullptr;
  for (const auto& [shape, of_rank] : counts) {
    if (widest == nullptr || of_rank.size() > widest->size()) {
      widest = &of_rank;
      widest_shape = &shape;
    }
  }
  std::map<std::size_t, std::string> reasons;
  if (widest == nullptr || widest->size() < 2) {
    return reasons;
  }
  if (const auto by_time = StoppedFirst(*widest, since[*widest_shape])) {
    return *by_time;
  }
  std::map<std::int64_t, std::size_t> ranks_at;
  for (const auto& [index, count] : *widest) {
    ++ranks_at[count];
  }
  if (ranks_at.size() < 2) {
    return reasons;
  }
  std::int64_t norm = ranks_at.begin()->first;
  std::size_t most = 0;
  bool tied = false;
  for (const auto& [count, how_many] : ranks_at) {
    if (how_many > most) {
      norm = count;
      most = how_many;
      tied = false;
    } else if (how_many == most) {
      tied = true;
    }
  }
  const std::int64_t highest = ranks_at.rbegin()->first;
  for (const auto& [index, count] : *widest) {
    if (tied) {
      if (count == highest) {
        reasons[index] =
            fmt::format("the last to make progress (at {} while its peers stopped sooner)", count);
      }
    } else if (count > norm) {
      reasons[index] =
          fmt::format("the last to make progress (at {} while {} of its peers stopped at {})",
                      count, most, norm);
    } else if (count < norm) {
      reasons[index] =
          fmt::format("behind its peers (at {} while {} of them reached {})", count, most, norm);
    }
  }
  return reasons;
}

// Whether a rank's exit is evidence against it. Not when no peer is left to have run on (all
// exited: the exits tell no one apart), and not when another rank printed the first error and
// this one's end says nothing of its own (an exit code, SIGTERM from the launcher, SIGABRT):
// the peers of a failed rank exit on its account, with gloo's "Connection closed by peer", or
// abort (C++'s "terminate called" in teardown, the NCCL watchdog's abort). A kill (the OOM
// killer, SIGKILL with no launcher's SIGTERM before it, SIGSEGV) is its own evidence.
bool ExitTells(const RankState& rank, const std::vector<RankState>& ranks, const JobClues& clues) {
  const bool peers_alive = std::any_of(ranks.begin(), ranks.end(), [&](const RankState& peer) {
    return &peer != &rank && peer.alive;
  });
  if (!peers_alive) {
    return false;
  }
  if (!clues.first_error_rank || rank.rank == clues.first_error_rank) {
    return true;
  }
  const std::string& cause = rank.exit_cause;
  return cause.find("OOM") != std::string::npos ||
         (cause.find("signal") != std::string::npos && cause.find("SIGTERM") == std::string::npos &&
          cause.find("SIGINT") == std::string::npos && cause.find("SIGHUP") == std::string::npos &&
          cause.find("SIGABRT") == std::string::npos);
}

}  // namespace

RankDiagnosis Diagnose(const std::vector<RankState>& ranks, const JobClues& clues) {
  RankDiagnosis diagnosis;
  std::map<std::string, std::size_t> group_of;  // where -> index in groups
  std::vector<std::string> where_of;
  for (const RankState& rank : ranks) {
    std::string where = rank.alive ? DescribeStack(rank.python, rank.native) : "exited";
    where_of.push_back(where);
    auto [at, added] = group_of.emplace(where, diagnosis.groups.size());
    if (added) {
      diagnosis.groups.push_back({{}, where, rank.alive && InCollective(rank.python, rank.native)});
    }
    diagnosis.groups[at->second].labels.push_back(rank.label);
  }
  std::stable_sort(
      diagnosis.groups.begin(), diagnosis.groups.end(),
      [](const RankGroup& a, const RankGroup& b) { return a.labels.size() > b.labels.size(); });
  const bool any_in_collective =
      std::any_of(diagnosis.groups.begin(), diagnosis.groups.end(),
                  [](const RankGroup& group) { return group.in_collective; });
  const std::map<std::size_t, std::string> progress_reasons =
      ProgressReasons(ranks, clues.progress);
  // The majority: the one largest group of live ranks, when it is larger than every other
  // (ranks that exited have no stack to differ from).
  std::vector<const RankGroup*> live_groups;
  for (const RankGroup& group : diagnosis.groups) {
    if (group.where != "exited") {
      live_groups.push_back(&group);
    }
  }
  const RankGroup* majority = nullptr;
  if (live_groups.size() > 1 && live_groups[0]->labels.size() > live_groups[1]->labels.size()) {
    majority = live_groups[0];
  }
  const RankGroup* waiting = nullptr;  // the largest group waiting in a collective
  for (const RankGroup& group : diagnosis.groups) {
    if (group.in_collective) {
      waiting = &group;
      break;
    }
  }
  if (clues.consequences_only) {
    return diagnosis;  // what these ranks printed was another's failure: no suspect here
  }
  const std::optional<WaitStraggler> straggler = StragglerByWaits(ranks);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const RankState& rank = ranks[i];
    const RankGroup& group =
        *std::find_if(diagnosis.groups.begin(), diagnosis.groups.end(),
                      [&](const RankGroup& candidate) { return candidate.where == where_of[i]; });
    std::vector<std::string> reasons;
    if (!rank.alive) {
      if (ExitTells(rank, ranks, clues)) {
        reasons.push_back("exited while its peers ran on" +
                          (rank.exit_cause.empty() ? "" : " (" + rank.exit_cause + ")"));
      }
    } else if (any_in_collective && !group.in_collective && group.where != "no stack") {
      reasons.push_back(
          "not inside a collective (" + group.where + ") while " + JoinLabels(waiting->labels) +
          (waiting->labels.size() == 1 ? " waits in " : " wait in ") + waiting->where);
    } else if (majority != nullptr && &group != majority && group.where != "no stack") {
      reasons.push_back("a different stack (" + group.where + ") from " +
                        JoinLabels(majority->labels) + " (" + majority->where + ")");
    }
    if (rank.alive && rank.cpu_percent && *rank.cpu_percent >= kBusyPercent) {
      // Idle peers are live ones measured idle: a rank whose only peers exited has nobody to
      // be busier than (it is likely printing its own consequence of their exit).
      bool peers_idle = true;
      bool any_live_peer = false;
      for (const RankState& peer : ranks) {
        if (&peer == &rank || !peer.alive) {
          continue;
        }
        any_live_peer = true;
        if (!peer.cpu_percent || *peer.cpu_percent > kIdlePercent) {
          peers_idle = false;
        }
      }
      if (any_live_peer && peers_idle) {
        std::string busy = "busy (";
        busy += Percent(*rank.cpu_percent) + " CPU) while its peers are idle";
        reasons.push_back(std::move(busy));
      }
    }
    if (straggler && straggler->index == i) {
      reasons.push_back(straggler->reason);
    }
    if (auto progress = progress_reasons.find(i); progress != progress_reasons.end()) {
      reasons.push_back(progress->second);
    }
    if (clues.reported_straggler && rank.rank == clues.reported_straggler) {
      reasons.push_back("the job's own straggler report names it the slowest");
    }
    if (clues.first_error_rank && rank.rank == clues.first_error_rank && ranks.size() > 1) {
      reasons.push_back("the first to print an error");
    }
    if (!reasons.empty()) {
      std::string reason = reasons[0];
      for (std::size_t r = 1; r < reasons.size(); ++r) {
        reason += "; " + reasons[r];
      }
      diagnosis.suspects.push_back({rank.label, rank.rank, rank.pid, reason});
    }
  }
  return diagnosis;
}

}  // namespace trainwatch::diagnose
