#include "collect/stuck_ranks.h"

#include <dirent.h>

#include <cstdlib>
#include <map>

#include "collect/rank_identity.h"
#include "collect/wait_state.h"
#include "core/proc_files.h"

namespace trainwatch::collect {
namespace {

constexpr std::size_t kMaxEnvironBytes = 256 * 1024;

}  // namespace

Result<StuckScan> FindStuckRanks(const std::string& proc_root, int samples,
                                 std::chrono::milliseconds every,
                                 const std::function<void(std::chrono::milliseconds)>& sleep) {
  DIR* dir = ::opendir(proc_root.c_str());
  if (dir == nullptr) {
    return Error{"cannot list " + proc_root};
  }
  StuckScan scan;
  std::map<int, StuckRank> in_d;  // by pid
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
    const std::optional<WaitState> state = ReadWaitState(static_cast<pid_t>(pid), proc_root);
    if (state && state->state == 'D') {
      in_d[static_cast<int>(pid)] = {static_cast<int>(pid), RankLabel(rank, static_cast<int>(pid)),
                                     state->wchan, 0};
    }
  }
  ::closedir(dir);
  for (int sample = 1; sample < samples && !in_d.empty(); ++sample) {
    sleep(every);
    for (auto it = in_d.begin(); it != in_d.end();) {
      const std::optional<WaitState> state = ReadWaitState(it->first, proc_root);
      if (!state || state->state != 'D') {
        it = in_d.erase(it);  // it woke up (or ended): only busy
      } else {
        it->second.seconds = std::chrono::duration<double>(every * sample).count();
        ++it;
      }
    }
  }
  for (auto& [pid, rank] : in_d) {
    scan.stuck.push_back(std::move(rank));
  }
  return scan;
}

}  // namespace trainwatch::collect
