// ProcessRoster: every process of the watched jobs the daemon has seen — the writers of the
// logs and the ranks under their launchers (torchrun's agent, mp.spawn's parent, mpirun...) —
// read while it ran (command line, environment, owner) and kept after it exits, with how it
// ended when the kernel said (ProcessExitWatch) or the OOM killer's line named it. A rank
// SIGKILLed while its peers hang is gone from /proc by the time the hang is captured; the
// roster is how its bundle still lists it, "exited (killed by signal 9 (SIGKILL))", instead of
// losing it. Looks run on the thread pool, one at a time. Loop thread only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/env.h"
#include "source/writers.h"

namespace trainwatch::watch {

class ProcessRoster {
 public:
  // Processes kept at most; the longest-exited go first.
  static constexpr std::size_t kMaxProcesses = 512;
  // How long an exited process is kept: longer than a collective's timeout (NCCL's 30 min by
  // default), after which its peers' hang is captured.
  static constexpr std::chrono::hours kKeepExited{2};
  // A look that has not ended by then no longer holds the next one back.
  static constexpr std::chrono::seconds kLookDeadline{60};
  static constexpr std::size_t kMaxExitsDuringLook = 4096;

  explicit ProcessRoster(Env& env) : env_(env) {}
  ~ProcessRoster() { *alive_ = false; }
  ProcessRoster(const ProcessRoster&) = delete;
  ProcessRoster& operator=(const ProcessRoster&) = delete;

  // Looks for the ranks under `seeds` (the writers now known, alive or not) and for which
  // remembered processes still run. A request made during a look runs after it.
  void Look(std::vector<pid_t> seeds);
  bool looking() const { return looking_; }
  // A process exited with a wait status (from ProcessExitWatch; any pid, most not ours).
  void OnExit(pid_t pid, int wait_status);
  // Every remembered process, its exit cause filled for those that ended: `oom_line(pid)` is
  // the OOM killer's line naming pid, if it named it.
  std::vector<source::WriterProcess> Remembered(
      const std::function<std::string(int pid)>& oom_line) const;
  std::size_t size() const { return entries_.size(); }
  // A remembered process not known to have ended, with its start time (since boot, in clock
  // ticks: a later process with its pid has another).
  struct Alive {
    source::WriterProcess process;
    std::uint64_t start_ticks = 0;
  };
  std::vector<Alive> AliveProcesses() const;
  // How `pid` ended, when it is remembered and the kernel told.
  std::optional<int> WaitStatusOf(pid_t pid) const {
    auto found = entries_.find(pid);
    return found == entries_.end() ? std::nullopt : found->second.wait_status;
  }

 private:
  struct Entry {
    source::WriterProcess process;
    std::uint64_t start_ticks = 0;   // tells a reused pid from the process remembered
    std::optional<SteadyTime> gone;  // when its exit was noticed
    std::optional<int> wait_status;  // as the kernel reported it
  };
  struct Found;
  void OnFound(const Found& found);
  void Trim();

  Env& env_;
  std::map<pid_t, Entry> entries_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  bool looking_ = false;
  SteadyTime look_started_{};
  std::shared_ptr<bool> look_alive_ = std::make_shared<bool>(true);  // the current look's
  std::optional<std::vector<pid_t>> again_;
  // Exits heard while a look runs: a rank it finds may be gone before it ends.
  std::map<pid_t, int> exits_during_look_;
};

// "killed by the kernel's OOM killer (signal 9)" when `oom_line` is not empty and the process
// was killed by SIGKILL or its status is unknown; else the status described
// (source::DescribeWaitStatus); empty when nothing is known. Pure.
std::string ExitCause(const std::optional<int>& wait_status, const std::string& oom_line);

}  // namespace trainwatch::watch
