// RankCapture: the ranks' part of a capture (a hang, a crash while other ranks live, a manual
// snapshot). Maps the job's ranks from the processes the daemon knows (collect/rank_map.h),
// samples each rank's CPU time twice a window apart, and meanwhile takes what can be read
// without stopping a rank: native stacks (eu-stack, all ranks at once), Python stacks by
// py-spy (non-blocking) or the Python hook of a job started with it (collect/python_hook.h:
// faulthandler, on a signal). After the window, gdb with the CPython helpers (py-bt) takes the
// Python stacks still missing, ParallelGdbs() ranks at a time (it stops a rank while it
// reads, which would look idle inside the window). Then it names the suspects
// (diagnose/suspects.h). Tools run as children under deadlines (CommandRunner); /proc reads
// and parsing on the thread pool. Loop thread only.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "capture/rank_report.h"
#include "collect/command_runner.h"
#include "collect/redactor.h"
#include "core/env.h"
#include "source/writers.h"

namespace trainwatch::capture {

class RankCapture {
 public:
  // The report, and what was redacted from the environments written into it.
  using Done = std::function<void(RankReport report, const collect::RedactionCounts& counts)>;
  // Between the two CPU samples: long enough that a busy rank's share is clear against the
  // suspects' thresholds (busy >= 50%, idle <= 10%): 30 clock ticks at 100 Hz, one tick 3%.
  // eu-stack, py-spy and the Python hooks read the stacks meanwhile; gdb, which stops a rank,
  // runs after it.
  static constexpr std::chrono::milliseconds kCpuWindow{300};
  // The window when no rank may be stopped (a snapshot, a slow incident): nothing waits on it
  // but the bundle, and the wait states sampled over it name a straggler (50 samples a second,
  // diagnose/wait_straggler.h: 150 samples, enough to tell a 1.3x straggler's few percent of
  // waiting from its peers' ~23%).
  static constexpr std::chrono::milliseconds kQuietWindow{3000};
  static constexpr std::chrono::milliseconds kWaitSampleEvery{20};
  // How many gdbs run at once: each reads ~300 libraries' symbols (a PyTorch rank's) before
  // it attaches, ~1.7-2.5 s of one core and ~0.5 GB: half the machine's cores, 2 to 8 (8
  // ranks' stacks in one round on a 16-core node).
  static std::size_t ParallelGdbs();
  // Children (DataLoader workers) whose stacks are taken per rank, and in all.
  static constexpr std::size_t kMaxWorkersPerRank = 8;
  static constexpr std::size_t kMaxWorkers = 16;
  static constexpr std::chrono::milliseconds kNativeTimeout{15000};
  static constexpr std::chrono::milliseconds kPythonTimeout{45000};
  // How long an early gdb waits for its go (the window and the other tools' deadlines).
  static constexpr std::chrono::seconds kGoWait{60};
  // From signalling the Python hooks to reading what they wrote.
  static constexpr std::chrono::milliseconds kHookWait{500};
  // Each read of a file a rank names (its Flight Recorder's, its Python hook's): past this it
  // is left behind (a hung file system) and the capture goes on without it.
  static constexpr std::chrono::milliseconds kRankFileDeadline{2000};

  explicit RankCapture(Env& env);
  ~RankCapture();
  RankCapture(const RankCapture&) = delete;
  RankCapture& operator=(const RankCapture&) = delete;

  // Captures the ranks around `pids`; `done` gets the report (ranks empty when none was
  // found). One at a time.
  // `remembered`: the writers read while they lived; those of them gone by now with a rank in
  // their environment join the report as exited ranks.
  // `clues`: what the streams say of the ranks (the first to print an error, their progress).
  // `may_pause`: whether eu-stack and gdb, which stop a rank while they read, may run (a
  // failure's capture); false for a snapshot of a job that may be healthy: only py-spy
  // --nonblocking, the Python hooks and /proc are read, and the report says so.
  void Run(std::vector<int> pids, std::vector<source::WriterProcess> remembered,
           diagnose::JobClues clues, bool may_pause,
           std::shared_ptr<const collect::Redactor> redactor, Done done);
  // Where gdb keeps its symbol index between captures (made when missing); empty: none.
  void set_gdb_index_dir(std::string dir) { gdb_index_dir_ = std::move(dir); }
  // The ranks one capture takes at most; the others are named in the report's notes.
  void set_max_ranks(std::size_t max_ranks) { max_ranks_ = max_ranks; }
  // Kills the tools that run; `done` is not called.
  void Abort();

 private:
  struct Job;
  // What gdb may use for the rank `pid`'s Python stacks, added to the job (on the pool).
  static void FindPythonHelper(Job& job, pid_t pid);
  // Starts gdb, for the first ranks that need it, reading symbols while the window runs.
  void StartEarlyGdb();
  void SampleAgain();
  // One sample of each rank's wait state, read on the pool, counted on the loop.
  void SampleWaits();
  // `tool` for every rank: `argv_before_pid` and the rank's pid, into ranks/<rank>/<tool>.txt.
  std::vector<config::CommandConfig> PerRank(const std::string& tool,
                                             const std::vector<std::string>& argv_before_pid) const;
  void RunNative();
  void RunPySpy();
  void SignalHooks();
  void ReadHooks();
  // gdb for the rank: py-bt when `python`, bt when eu-stack is missing; with `go_file`, it
  // reads the executable first and attaches when that file appears.
  // `worker`: the same for that child of the rank (a DataLoader worker: the same interpreter
  // and root), into ranks/<rank>/worker-<pid>/gdb.txt.
  config::CommandConfig GdbFor(std::size_t rank_index, bool python, const std::string& go_file,
                               pid_t worker = 0) const;
  // The go file for a gdb started after the window (already there); empty: none.
  std::string LateGoFile() const;
  void OnGdbDone(std::size_t rank_index, collect::CollectorResult result);
  // The rest of gdb's ranks, once the window's second sample is in and the early gdbs ended.
  void MaybeRunPython();
  void RunPython(std::size_t next);
  // The Python stacks of the children of the ranks whose main thread waits for its DataLoader
  // workers, ParallelGdbs() at a time; then Finish.
  void RunWorkers();
  void RunWorkerGdb(std::size_t next);
  void Finish();

  Env& env_;
  collect::CommandRunner runner_;          // devices, eu-stack, py-spy
  collect::CommandRunner gdb_runner_;      // gdb, which may start while the others run
  std::unique_ptr<LoopTimer> timer_;       // the CPU window
  std::unique_ptr<LoopTimer> wait_timer_;  // its wait-state samples (no rank may be stopped)
  std::unique_ptr<LoopTimer> hook_timer_;  // from signalling the hooks to reading them
  std::shared_ptr<Job> job_;
  std::string gdb_index_dir_;
  std::size_t max_ranks_ = 16;
};

}  // namespace trainwatch::capture
