// RankCapture: the ranks' part of a capture (a hang, a crash while other ranks live, a manual
// snapshot). Maps the job's ranks from the processes the daemon knows (collect/rank_map.h),
// samples each rank's CPU time twice a window apart (before any debugger pauses it), then
// takes every rank's native stacks (eu-stack, all ranks at once: a fraction of a second each)
// and Python stacks by the first route that works — py-spy (non-blocking), else the Python
// hook of a job started with it (collect/python_hook.h: faulthandler, on a signal, no pause),
// else gdb with the CPython helpers (py-bt), kParallelAttach ranks at a time — and names the
// suspects
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
  // Between the two CPU samples: long enough that a busy rank's share is clear.
  static constexpr std::chrono::milliseconds kCpuWindow{2000};
  static constexpr std::size_t kParallelAttach = 2;
  static constexpr std::chrono::milliseconds kNativeTimeout{15000};
  static constexpr std::chrono::milliseconds kPythonTimeout{45000};
  // From signalling the Python hooks to reading what they wrote.
  static constexpr std::chrono::milliseconds kHookWait{500};

  explicit RankCapture(Env& env);
  ~RankCapture();
  RankCapture(const RankCapture&) = delete;
  RankCapture& operator=(const RankCapture&) = delete;

  // Captures the ranks around `pids`; `done` gets the report (ranks empty when none was
  // found). One at a time.
  // `remembered`: the writers read while they lived; those of them gone by now with a rank in
  // their environment join the report as exited ranks.
  // `clues`: what the streams say of the ranks (the first to print an error, their progress).
  void Run(std::vector<int> pids, std::vector<source::WriterProcess> remembered,
           diagnose::JobClues clues, std::shared_ptr<const collect::Redactor> redactor, Done done);
  // Where gdb keeps its symbol index between captures (made when missing); empty: none.
  void set_gdb_index_dir(std::string dir) { gdb_index_dir_ = std::move(dir); }
  // Kills the tools that run; `done` is not called.
  void Abort();

 private:
  struct Job;
  void SampleAgain();
  // `tool` for every rank: `argv_before_pid` and the rank's pid, into ranks/<rank>/<tool>.txt.
  std::vector<config::CommandConfig> PerRank(const std::string& tool,
                                             const std::vector<std::string>& argv_before_pid) const;
  void RunNative();
  void RunPySpy();
  void FindHooks();
  void ReadHooks();
  void RunPython(std::size_t next);
  void Finish();

  Env& env_;
  collect::CommandRunner runner_;
  std::unique_ptr<LoopTimer> timer_;
  std::shared_ptr<Job> job_;
  std::string gdb_index_dir_;
};

}  // namespace trainwatch::capture
