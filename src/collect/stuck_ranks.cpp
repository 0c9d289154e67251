#include "collect/stuck_ranks.h"

#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "collect/blocked_call.h"
#include "collect/blocked_threads.h"
#include "collect/rank_identity.h"
#include "collect/wait_state.h"
#include "core/proc_files.h"

namespace trainwatch::collect {
namespace {

constexpr std::size_t kMaxEnvironBytes = 256 * 1024;

bool AnyInD(const std::vector<ThreadProgress>& threads) {
  return std::any_of(threads.begin(), threads.end(),
                     [](const ThreadProgress& thread) { return thread.state == 'D'; });
}

}  // namespace

Result<StuckScan> FindStuckRanks(const std::string& proc_root, int samples,
                                 std::chrono::milliseconds every,
                                 const std::function<void(std::chrono::milliseconds)>& sleep) {
  DIR* dir = ::opendir(proc_root.c_str());
  if (dir == nullptr) {
    return Error{"cannot list " + proc_root};
  }
  StuckScan scan;
  // Stuck: a thread in D at every sample and never switched out between them — BlockedThreads'
  // test, over the samples' span (heavy I/O sits in D too, but is woken at each request).
  BlockedThreads threads(every * std::max(samples - 1, 0));
  SteadyTime at{};                          // the samples' own time: `every` apart
  std::map<pid_t, std::string> candidates;  // ranks with a thread in D, by pid: their labels
  auto look = [&](pid_t pid, const std::string& label) {
    const std::vector<ThreadProgress> progress = ReadThreadProgress(pid, proc_root);
    if (const std::optional<BlockedThreads::Stuck> stuck = threads.Observe(pid, progress, at)) {
      // Where the stuck thread sleeps, which need not be the main one (a checkpoint writer's).
      const std::string task = "task/" + std::to_string(stuck->tid) + "/wchan";
      const Result<ProcText> wchan = ReadProcFile(ProcPath(proc_root, pid, task), 256);
      scan.stuck.push_back({pid, label, wchan ? ParseWchan(wchan->text) : std::string(),
                            std::chrono::duration<double>(stuck->blocked).count()});
      return false;  // told: no need to look again
    }
    return AnyInD(progress);
  };
  while (const dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || pid <= 0) {
      continue;
    }
    const Result<ProcText> environ =
        ReadProcFile(ProcPath(proc_root, static_cast<pid_t>(pid), "environ"), kMaxEnvironBytes);
    const std::optional<int> rank = environ ? RankInEnviron(environ->text) : std::nullopt;
    if (!rank) {
      continue;
    }
    ++scan.ranks;
    std::string label = RankLabel(rank, static_cast<int>(pid));
    if (look(static_cast<pid_t>(pid), label)) {
      candidates.emplace(static_cast<pid_t>(pid), std::move(label));
    }
  }
  ::closedir(dir);
  for (int sample = 1; sample < samples && !candidates.empty(); ++sample) {
    sleep(every);
    at += every;
    std::erase_if(candidates, [&](const auto& candidate) {
      return !look(candidate.first, candidate.second);  // stuck, woken or ended
    });
  }
  return scan;
}

}  // namespace trainwatch::collect
