// Capture: turns an incident into a bundle. Runs the command collectors (CommandRunner) and,
// at the same time on the thread pool, the in-process ones (environment, processes, /proc
// facts, disk usage, log tails, $HABANA_LOGS, extra paths); then makes room under the
// retention limits — writing a reduced bundle (manifest, incident, small outputs) where a
// full one would break `min_free` — and writes the bundle on the thread pool. One capture at
// a time; a few wait their turn, more are dropped and say so. Loop thread only.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bundle/bundle_writer.h"
#include "capture/capture_types.h"
#include "capture/rank_capture.h"
#include "collect/artifact.h"
#include "collect/command_runner.h"
#include "collect/redactor.h"
#include "config/capture_config.h"
#include "core/env.h"
#include "diagnose/stack_rules.h"

namespace trainwatch::capture {

struct CaptureJob;  // capture/capture_job.h

class Capturer {
 public:
  using Done = std::function<void(const CaptureOutcome& outcome)>;
  static constexpr std::size_t kMaxQueued = 4;
  // A capture still under way this long is given up (its early bundle stays): a part of it
  // wedged where no deadline reaches (a hung file system) must not hold every capture after
  // it. Longer than any capture that works: sixteen ranks' debuggers two at a time take
  // minutes.
  static constexpr std::chrono::milliseconds kCaptureDeadline{10 * 60 * 1000};

  // The redactor is built at the first firing or capture, not here: it compiles dozens of
  // patterns, and a daemon that never sees one should not carry them (2-5 MB of memory).
  // `on_early`: each capture's early bundle once it is on disk (its outcome names the
  // incident, the path and the size; the complete bundle replaces it under the same name).
  Capturer(Env& env, config::CaptureConfig config, Done on_early = nullptr);
  ~Capturer();

  void Capture(CaptureRequest request, Done done);
  void Reconfigure(config::CaptureConfig config);
  // The site's stack rules, tried on a hang's stacks before the built-in verdicts; from the
  // next capture on.
  void set_stack_rules(std::shared_ptr<const diagnose::StackRules> rules) {
    stack_rules_ = std::move(rules);
  }
  // Stops what runs (the daemon is stopping): its bundle is not written. Returns the capture
  // under way's early bundle when one was written (it stays on disk), for its record.
  std::optional<CaptureOutcome> Abort();
  const config::CaptureConfig& config() const { return config_; }
  // The redactor of the configured rules, for the text of incidents as it enters the daemon
  // (one redactor for that and the bundles). Built at its first use; never null: rules that do
  // not build (only if the config check was skipped) give the built-in patterns alone.
  std::shared_ptr<const collect::Redactor> redactor();

 private:
  using Job = CaptureJob;
  void StopWork();  // Abort's part that the destructor needs too
  Result<std::shared_ptr<const collect::Redactor>> BuildRedactor();
  void StartNext();
  // kCaptureDeadline passed: the capture under way is given up, with what it has, and the
  // next one starts; its wedged work, when it returns, finds another job_ and is ignored.
  void AbandonWedged();
  // On the pool: the processes process_pattern names, the job's container, our own.
  static void FindJobProcesses(Job& job, const std::string& proc_root);
  void OnProcessesKnown();
  void OnCommandsDone(std::vector<collect::CollectorResult> results);
  void OnBuiltinsDone();
  void OnRanksDone(RankReport report, const collect::RedactionCounts& counts);
  // Writes what is ready: the bundle once every part is in. Before that, once the in-process
  // collectors are done and the tools have answered (or a second has passed), while the
  // ranks' stacks (a debugger on every rank: the longest part) or the tools are still at
  // work, an early bundle under the same name: the first evidence is on disk even if the
  // node goes down before the rest is.
  void MaybeWrite();
  void WriteEarlyBundle();
  void StopEarlyWait();  // once an early or the complete bundle is under way
  void OnEarlyWritten();
  void WriteBundle();
  // On the pool: the bundle (or the early one) from `artifacts`; `collectors` and
  // `redactions` are the job's as of now, copied on the loop.
  void StartWrite(std::vector<collect::Artifact> artifacts,
                  std::vector<collect::CollectorResult> collectors,
                  collect::RedactionCounts redactions, bool early);
  void OnWritten();

  Env& env_;
  config::CaptureConfig config_;
  std::shared_ptr<const diagnose::StackRules> stack_rules_;
  std::shared_ptr<const collect::Redactor> redactor_;
  collect::CommandRunner runner_;
  RankCapture ranks_;
  std::deque<std::pair<CaptureRequest, Done>> queue_;
  Done on_early_;
  std::shared_ptr<Job> job_;  // shared with the pool's work on it, which may outlive it
  std::unique_ptr<LoopTimer> early_timer_;     // see kEarlyWait
  std::unique_ptr<LoopTimer> deadline_timer_;  // see kCaptureDeadline
  bool running_ = false;
  bool aborted_ = false;
};

}  // namespace trainwatch::capture
