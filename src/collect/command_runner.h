// CommandRunner: runs a capture's command collectors (hl-smi -q, nvidia-smi -q, docker ps...)
// concurrently on the loop, each in its own process group under its deadline: SIGTERM to the
// group at the deadline, SIGKILL a second later, and a child that still does not die (stuck
// in uninterruptible sleep on a wedged device, as hl-smi and nvidia-smi do) is abandoned —
// never waited on — and recorded. The same tool is not run again while that child lives.
// When a child ends (or is killed), what it started and left behind is killed too, found by a
// mark in its environment (stray_processes.h): a setsid'd grandchild is outside the group.
// Output is capped (first or last bytes). Children, timers and the clock come from the Env,
// so unit tests step the escalation on a fake one. Loop thread only.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collect/artifact.h"
#include "config/capture_config.h"
#include "core/env.h"

namespace trainwatch::collect {

class CommandRunner {
 public:
  using Done = std::function<void(std::vector<collect::CollectorResult> results)>;

  // A command whose child would not die is not run again while that child lives: the
  // commands running the same tool (a wedged device hangs every hl-smi), or for hooks, which
  // share tools (sh, curl) but not their fate, the same name.
  enum class HungKey { kTool, kName };
  explicit CommandRunner(Env& env, HungKey hung_key = HungKey::kTool);
  ~CommandRunner();
  CommandRunner(const CommandRunner&) = delete;
  CommandRunner& operator=(const CommandRunner&) = delete;

  // Runs every command (placeholders already expanded); `done` gets one result per command, in
  // order, once each has ended, timed out or been abandoned. One batch at a time.
  void Run(std::vector<config::CommandConfig> commands, Done done);
  // Kills what still runs (the daemon is stopping); `done` is not called.
  void Abort();
  // The names of the commands still running (for a log line when they are aborted).
  std::vector<std::string> Running() const;

  // How long a child may take to die after SIGTERM, and after SIGKILL, before it is killed
  // harder or abandoned.
  static constexpr auto kTermGrace = std::chrono::milliseconds(1000);
  static constexpr auto kKillGrace = std::chrono::milliseconds(2000);

 private:
  struct Child;
  void Finish(Child& child);
  void OnTimer(Child& child);
  void MaybeComplete();
  // SIGKILL to every process that carries `child`'s run mark but the child itself: what it
  // started and left behind, wherever setsid took it (collect/stray_processes.h).
  void KillStrays(const Child& child);

  Env& env_;
  std::vector<std::unique_ptr<Child>> children_;

  std::vector<collect::CollectorResult> results_;
  Done done_;
  std::size_t pending_ = 0;
  // A tool (or name) whose last run would not die: its pid, until that process is gone.
  std::map<std::string, int> hung_;
  HungKey hung_key_;
  std::string KeyOf(const config::CommandConfig& command) const {
    return hung_key_ == HungKey::kTool ? command.argv.front() : command.name;
  }
};

}  // namespace trainwatch::collect
