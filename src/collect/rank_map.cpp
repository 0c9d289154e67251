#include "collect/rank_map.h"

#include <re2/re2.h>

#include <algorithm>
#include <map>
#include <set>

#include "collect/process_collectors.h"
#include "core/proc_files.h"

namespace trainwatch::collect {
namespace {

// The helpers multiprocessing starts beside the ranks: never ranks.
bool IsHelper(const std::string& cmdline) {
  return cmdline.find("multiprocessing.resource_tracker") != std::string::npos ||
         cmdline.find("multiprocessing.semaphore_tracker") != std::string::npos ||
         cmdline.find("multiprocessing.forkserver") != std::string::npos;
}

bool IsSpawnChild(const std::string& cmdline) {
  return cmdline.find("--multiprocessing-fork") != std::string::npos;
}

struct Facts {
  std::string cmdline;
  std::string environ;
  RankIdentity identity;
};

}  // namespace

bool IsLauncherCommand(const std::string& cmdline) {
  static const RE2 kLaunchers(
      R"((^|[ /])(torchrun|deepspeed|mpirun|mpiexec|orterun|prterun|srun|accelerate|horovodrun)( |$))"
      R"(|torch\.distributed\.(run|launch)( |$)|(^|[ /])-m deepspeed\.launcher)");
  return RE2::PartialMatch(cmdline, kLaunchers);
}

RankMap BuildRankMap(const std::vector<pid_t>& seeds, const ProcessTree& tree,
                     const std::string& proc_root) {
  RankMap map;
  std::map<pid_t, Facts> facts;
  auto read = [&](pid_t pid) -> const Facts& {
    auto found = facts.find(pid);
    if (found != facts.end()) {
      return found->second;
    }
    Facts read_facts;
    if (Result<ProcText> cmdline = ReadProcCmdline(pid, proc_root)) {
      read_facts.cmdline = JoinCmdline(cmdline->text, /*quote=*/false);
    }
    if (Result<ProcText> environ = ReadProcEnviron(pid, proc_root)) {
      read_facts.environ = std::move(environ->text);
      read_facts.identity = ParseRankIdentity(read_facts.environ);
    } else if (tree.Find(pid) != nullptr) {
      map.notes.push_back(std::string("pid ") + std::to_string(pid) + ": " +
                          environ.error().message);
      map.unreadable.push_back(pid);
    }
    return facts.emplace(pid, std::move(read_facts)).first->second;
  };

  // Up from each seed to the outermost launcher above it (three levels at most: srun, the
  // agent, a shell between them).
  std::vector<pid_t> roots;
  for (pid_t seed : seeds) {
    pid_t root = seed;
    for (int level = 0; level < 3; ++level) {
      const ProcessStat* at = tree.Find(root);
      if (at == nullptr || at->ppid <= 1 || tree.Find(at->ppid) == nullptr) {
        break;
      }
      if (!IsLauncherCommand(read(at->ppid).cmdline) && !IsSpawnChild(read(root).cmdline)) {
        break;
      }
      root = at->ppid;
    }
    roots.push_back(root);
  }
  const std::vector<pid_t> walked = tree.WithDescendants(roots);
  for (pid_t pid : walked) {
    if (IsLauncherCommand(read(pid).cmdline)) {
      map.launchers.push_back(pid);
    }
  }

  // Ranks by their variables, from the most specific source any of them has.
  int best = static_cast<int>(std::size(kRankVariables));
  for (pid_t pid : walked) {
    const Facts& f = read(pid);
    if (f.identity.rank && !IsHelper(f.cmdline)) {
      best = std::min(best, RankSourcePriority(f.identity.rank_source));
    }
  }
  std::vector<pid_t> ranked;
  for (pid_t pid : walked) {
    const Facts& f = read(pid);
    if (f.identity.rank && !IsHelper(f.cmdline) &&
        RankSourcePriority(f.identity.rank_source) == best) {
      ranked.push_back(pid);
    }
  }
  auto under_same_rank = [&](pid_t pid) {
    return std::any_of(ranked.begin(), ranked.end(), [&](pid_t other) {
      return other != pid && read(other).identity.rank == read(pid).identity.rank &&
             tree.IsAncestor(other, pid);
    });
  };
  std::vector<RankProcess> ranks;
  auto add = [&](pid_t pid, std::optional<int> rank, std::string source) {
    const Facts& f = read(pid);
    RankProcess process;
    process.pid = pid;
    process.rank = rank;
    process.rank_source = std::move(source);
    process.identity = f.identity;
    process.cmdline = f.cmdline;
    process.environ = f.environ;
    if (const ProcessStat* stat = tree.Find(pid)) {
      process.comm = stat->comm;
      if (std::find(map.launchers.begin(), map.launchers.end(), stat->ppid) !=
              map.launchers.end() ||
          (stat->ppid > 1 && process.rank_source == "spawn order")) {
        process.launcher = stat->ppid;
      }
    }
    ranks.push_back(std::move(process));
  };
  for (pid_t pid : ranked) {
    if (!under_same_rank(pid)) {
      add(pid, read(pid).identity.rank, read(pid).identity.rank_source);
    }
  }
  if (ranks.empty()) {
    // mp.spawn: its children carry no rank variable; they are started in rank order.
    std::map<pid_t, int> next_index;  // by parent
    for (pid_t pid : walked) {
      const ProcessStat* stat = tree.Find(pid);
      const ProcessStat* parent = stat ? tree.Find(stat->ppid) : nullptr;
      if (stat == nullptr || !IsSpawnChild(read(pid).cmdline) ||
          (parent != nullptr && IsSpawnChild(read(parent->pid).cmdline))) {
        continue;  // not a spawn child, or a DataLoader worker of one
      }
      add(pid, next_index[stat->ppid]++, "spawn order");
    }
  }
  if (ranks.empty()) {
    for (pid_t pid : seeds) {
      if (tree.Find(pid) != nullptr && !IsLauncherCommand(read(pid).cmdline) &&
          !IsHelper(read(pid).cmdline)) {
        add(pid, std::nullopt, "");
      }
    }
  }
  std::stable_sort(ranks.begin(), ranks.end(), [](const RankProcess& a, const RankProcess& b) {
    if (a.rank.has_value() != b.rank.has_value()) {
      return a.rank.has_value();
    }
    return a.rank != b.rank ? a.rank < b.rank : a.pid < b.pid;
  });
  map.ranks = std::move(ranks);
  return map;
}

RankMap MapRanks(std::vector<pid_t> seeds, const std::string& process_pattern,
                 const std::string& proc_root) {
  if (!process_pattern.empty()) {
    if (Result<std::vector<ProcessInfo>> found = FindProcesses(process_pattern, proc_root)) {
      for (const ProcessInfo& process : *found) {
        if (std::find(seeds.begin(), seeds.end(), process.pid) == seeds.end()) {
          seeds.push_back(process.pid);
        }
      }
    }
  }
  return BuildRankMap(seeds, ProcessTree::Read(proc_root), proc_root);
}

}  // namespace trainwatch::collect
