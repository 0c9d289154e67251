#include "collect/stuck_ranks.h"

#include <dirent.h>

#include <cstdlib>
#include <map>

#include "collect/blocked_call.h"
#include "collect/rank_identity.h"
#include "collect/wait_state.h"
#include "core/proc_files.h"

namespace trainwatch::collect {
namespace {

constexpr std::size_t kMaxEnvironBytes = 256 * 1024;

// The threads of `pid` in D now, each with its switch count.
std::map<pid_t, std::uint64_t> ThreadsInD(pid_t pid, const std::string& proc_root) {
  std::map<pid_t, std::uint64_t> in_d;
  for (const ThreadProgress& thread : ReadThreadProgress(pid, proc_root)) {
    if (thread.state == 'D') {
      in_d.emplace(thread.tid, thread.switches);
    }
  }
  return in_d;
}

// A rank seen in D, and its threads there: stuck while one of them stays in D unswitched.
struct Candidate {
  StuckRank rank;
  std::map<pid_t, std::uint64_t> threads;
};

}  // namespace

Result<StuckScan> FindStuckRanks(const std::string& proc_root, int samples,
                                 std::chrono::milliseconds every,
                                 const std::function<void(std::chrono::milliseconds)>& sleep) {
  DIR* dir = ::opendir(proc_root.c_str());
  if (dir == nullptr) {
    return Error{"cannot list " + proc_root};
  }
  StuckScan scan;
  std::map<int, Candidate> in_d;  // by pid
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
    std::map<pid_t, std::uint64_t> threads = ThreadsInD(static_cast<pid_t>(pid), proc_root);
    if (!threads.empty()) {
      const std::optional<WaitState> state = ReadWaitState(static_cast<pid_t>(pid), proc_root);
      in_d[static_cast<int>(pid)] = {{static_cast<int>(pid), RankLabel(rank, static_cast<int>(pid)),
                                      state ? state->wchan : std::string(), 0},
                                     std::move(threads)};
    }
  }
  ::closedir(dir);
  for (int sample = 1; sample < samples && !in_d.empty(); ++sample) {
    sleep(every);
    for (auto it = in_d.begin(); it != in_d.end();) {
      // A thread doing I/O, however heavy, is woken at each completed request (its switch
      // count moves) even when every sample finds it in D: only one never woken is stuck.
      const std::map<pid_t, std::uint64_t> now = ThreadsInD(it->first, proc_root);
      std::erase_if(it->second.threads, [&](const auto& thread) {
        const auto seen = now.find(thread.first);
        return seen == now.end() || seen->second != thread.second;
      });
      if (it->second.threads.empty()) {
        it = in_d.erase(it);  // woken (or ended): only busy
      } else {
        it->second.rank.seconds = std::chrono::duration<double>(every * sample).count();
        ++it;
      }
    }
  }
  for (auto& [pid, candidate] : in_d) {
    // Where the stuck thread sleeps, which need not be the main one (a checkpoint writer's).
    const pid_t tid = candidate.threads.begin()->first;
    if (Result<ProcText> wchan =
            ReadProcFile(ProcPath(proc_root, pid, "task/" + std::to_string(tid) + "/wchan"), 256);
        wchan && !ParseWchan(wchan->text).empty()) {
      candidate.rank.wchan = ParseWchan(wchan->text);
    }
    scan.stuck.push_back(std::move(candidate.rank));
  }
  return scan;
}

}  // namespace trainwatch::collect
