#include "watch/process_roster.h"

#include <sys/wait.h>

#include <csignal>

#include "collect/process_tree.h"
#include "collect/rank_map.h"
#include "source/process_exits.h"

namespace trainwatch::watch {

struct ProcessRoster::Found {
  std::map<pid_t, std::uint64_t> still_running;  // of the remembered pids: their start now
  std::vector<std::pair<source::WriterProcess, std::uint64_t>> new_ranks;
};

void ProcessRoster::Look(std::vector<pid_t> seeds) {
  if (looking_ && env_.SteadyNow() - look_started_ < kLookDeadline) {
    again_ = std::move(seeds);
    return;
  }
  // A look stuck past its deadline (a read of a rank's memory held in the kernel) is left to
  // its thread; its result, should it come, is dropped.
  *look_alive_ = false;
  look_alive_ = std::make_shared<bool>(true);
  looking_ = true;
  look_started_ = env_.SteadyNow();
  std::map<pid_t, std::uint64_t> remembered;
  for (const auto& [pid, entry] : entries_) {
    if (!entry.gone) {
      remembered.emplace(pid, entry.start_ticks);
    }
  }
  auto found = std::make_shared<Found>();
  std::shared_ptr<bool> alive = alive_;
  std::shared_ptr<bool> current = look_alive_;
  env_.RunOnPool(
      [seeds = std::move(seeds), remembered = std::move(remembered), found,
       proc_root = env_.proc_root()] {
        const collect::ProcessTree tree = collect::ProcessTree::Read(proc_root);
        for (const auto& [pid, start] : remembered) {
          if (const collect::ProcessStat* now = tree.Find(pid)) {
            found->still_running.emplace(pid, now->start_ticks);
          }
        }
        std::vector<pid_t> running;
        for (pid_t seed : seeds) {
          if (tree.Find(seed) != nullptr) {
            running.push_back(seed);
          }
        }
        if (running.empty()) {
          return;
        }
        for (const collect::RankProcess& rank :
             collect::BuildRankMap(running, tree, proc_root).ranks) {
          const collect::ProcessStat* stat = tree.Find(rank.pid);
          auto known = remembered.find(rank.pid);
          if (!rank.rank || stat == nullptr ||
              (known != remembered.end() && known->second == stat->start_ticks)) {
            continue;
          }
          source::WriterProcess process;
          process.pid = rank.pid;
          process.comm = rank.comm;
          source::RememberProcess(process, proc_root);
          if (!process.environ.empty()) {
            found->new_ranks.emplace_back(std::move(process), stat->start_ticks);
          }
        }
      },
      [this, alive, current, found] {
        if (!*alive || !*current) {
          return;
        }
        looking_ = false;
        OnFound(*found);
        if (again_) {
          Look(*std::exchange(again_, std::nullopt));
        }
      });
}

void ProcessRoster::OnFound(const Found& found) {
  const SteadyTime now = env_.SteadyNow();
  for (auto& [pid, entry] : entries_) {
    auto running = found.still_running.find(pid);
    if (!entry.gone &&
        (running == found.still_running.end() || running->second != entry.start_ticks)) {
      entry.gone = now;
    }
  }
  for (const auto& [process, start] : found.new_ranks) {
    Entry& entry = entries_[process.pid];  // a reused pid's old process is replaced
    entry = Entry{process, start, std::nullopt, std::nullopt};
    if (auto exited = exits_during_look_.find(process.pid); exited != exits_during_look_.end()) {
      entry.gone = now;
      entry.wait_status = exited->second;
    }
  }
  exits_during_look_.clear();
  Trim();
}

void ProcessRoster::OnExit(pid_t pid, int wait_status) {
  if (looking_) {
    // A rank the look under way finds may exit before the look ends: kept for it (a few).
    if (exits_during_look_.size() < kMaxExitsDuringLook) {
      exits_during_look_.emplace(pid, wait_status);
    }
  }
  auto entry = entries_.find(pid);
  // Not one already gone: a later process with its pid is not it.
  if (entry == entries_.end() || entry->second.wait_status || entry->second.gone) {
    return;
  }
  entry->second.wait_status = wait_status;
  if (!entry->second.gone) {
    entry->second.gone = env_.SteadyNow();
  }
}

std::vector<source::WriterProcess> ProcessRoster::Remembered(
    const std::function<std::string(int pid)>& oom_line) const {
  std::vector<source::WriterProcess> remembered;
  remembered.reserve(entries_.size());
  for (const auto& [pid, entry] : entries_) {
    remembered.push_back(entry.process);
    if (entry.gone) {
      remembered.back().exit_cause =
          ExitCause(entry.wait_status, oom_line ? oom_line(pid) : std::string());
    }
  }
  return remembered;
}

std::vector<ProcessRoster::Alive> ProcessRoster::AliveProcesses() const {
  std::vector<Alive> alive;
  for (const auto& [pid, entry] : entries_) {
    if (!entry.gone) {
      alive.push_back({entry.process, entry.start_ticks});
    }
  }
  return alive;
}

void ProcessRoster::Trim() {
  const SteadyTime now = env_.SteadyNow();
  std::erase_if(entries_, [&](const auto& item) {
    return item.second.gone && now - *item.second.gone > kKeepExited;
  });
  while (entries_.size() > kMaxProcesses) {
    // The longest gone first; failing any gone, the lowest pid.
    auto drop = entries_.begin();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->second.gone && (!drop->second.gone || *it->second.gone < *drop->second.gone)) {
        drop = it;
      }
    }
    entries_.erase(drop);
  }
}

std::string ExitCause(const std::optional<int>& wait_status, const std::string& oom_line) {
  const bool killed = wait_status && WIFSIGNALED(*wait_status) && WTERMSIG(*wait_status) == SIGKILL;
  if (!oom_line.empty() && (!wait_status || killed)) {
    return "killed by the kernel's OOM killer (signal 9)";
  }
  return wait_status ? source::DescribeWaitStatus(*wait_status) : std::string();
}

}  // namespace trainwatch::watch
