// RankCapture's gdb step: gdb with the CPython helpers (py-bt) takes the Python stacks that
// py-spy and the hooks left missing, and the native stacks where eu-stack is not installed.
// It stops a rank while it reads, so it attaches only once the CPU window is over: the first
// ParallelGdbs() ranks' gdbs start with the window, read symbols and wait for the go file;
// the others run after, as many at a time, and read their symbols before they attach
// too (the go file is there by then). What held a rank is what gdb itself timed between
// attach and detach (gdb_preload.h). Split from rank_capture.cpp; the same RankCapture, loop
// thread only.
#include <algorithm>
#include <csignal>
#include <thread>

#include "capture/gdb_command.h"
#include "capture/gdb_preload.h"
#include "capture/rank_capture.h"
#include "capture/rank_capture_job.h"
#include "capture/rank_report.h"
#include "collect/process_tree.h"
#include "diagnose/stack_verdict.h"

namespace trainwatch::capture {

using collect::CollectorResult;
using collect::CollectorStatus;

namespace {

// A gdb that read the symbols before it attached timed the hold itself: that, not its run.
void HoldOnly(CollectorResult& result) {
  for (const collect::Artifact& artifact : result.artifacts) {
    if (const std::optional<double> held = HeldSecondsIn(artifact.content)) {
      result.duration_seconds = std::min(result.duration_seconds, *held);
    }
  }
}

}  // namespace

void RankCapture::StartEarlyGdb() {
  Job& job = *job_;
  job.gdb.resize(job.report.ranks.size());
  if (job.go_dir.empty() || !job.may_pause) {
    return;  // no folder for the go file: gdb runs after the window, as a whole (or never)
  }
  for (std::size_t i = 0; i < job.report.ranks.size() && job.early_gdb.size() < ParallelGdbs();
       ++i) {
    // Known now: whether gdb must print this rank's Python stacks (no py-spy, no hook) or
    // native ones (no eu-stack). Should py-spy fail for a rank, gdb runs after the window.
    const bool python = !job.py_spy_installed && !job.hooks[i];
    if (python || job.NativeByGdb(i)) {
      job.early_gdb.push_back(i);
    }
  }
  if (job.early_gdb.empty()) {
    return;
  }
  job.early_done = false;
  std::vector<config::CommandConfig> commands;
  for (std::size_t i : job.early_gdb) {
    job.early_python.push_back(!job.py_spy_installed && !job.hooks[i]);
    commands.push_back(GdbFor(i, job.early_python.back(), job.GoFile()));
  }
  gdb_runner_.Run(std::move(commands), [this](std::vector<CollectorResult> results) {
    Job& current = *job_;
    const double since_go =
        current.go_sent ? std::chrono::duration<double>(env_.SteadyNow() - current.go_at).count()
                        : 0;
    for (std::size_t i = 0; i < results.size(); ++i) {
      // What held the rank is the time since the go, not the symbols read before it.
      results[i].duration_seconds = std::min(results[i].duration_seconds, since_go);
      OnGdbDone(current.early_gdb[i], std::move(results[i]));
    }
    current.early_done = true;
    MaybeRunPython();
  });
}

void RankCapture::MaybeRunPython() {
  Job& job = *job_;
  if (!job.second_sampled || !job.early_done || job.python_started) {
    return;
  }
  job.python_started = true;
  // An early gdb that failed, or that printed no Python stacks where py-spy then failed or a
  // hook wrote nothing, is run again now, as after the window.
  for (std::size_t k = 0; k < job.early_gdb.size(); ++k) {
    const std::size_t i = job.early_gdb[k];
    const bool failed = !job.gdb[i] || job.gdb[i]->status != CollectorStatus::kOk;
    if (failed || (job.wants_python[i] && !job.early_python[k])) {
      job.need_gdb.push_back(i);
      job.python_by_gdb.push_back(job.wants_python[i]);
    }
  }
  RunPython(0);
}

config::CommandConfig RankCapture::GdbFor(std::size_t rank_index, bool python,
                                          const std::string& go_file, pid_t worker) const {
  const RankEvidence& rank = job_->report.ranks[rank_index];
  GdbRequest request;
  request.pid = worker != 0 ? worker : rank.process.pid;
  request.proc_root = job_->proc_root;
  // Without a helper it may load, gdb has no py-bt: it prints the native stacks, and the
  // report says why the Python ones are missing.
  request.python_helper = job_->python_helpers[rank_index];
  request.python = python && !request.python_helper.empty();
  request.exe_copy = job_->exe_copies[rank_index];
  request.debug_dir = job_->debug_dirs[rank_index];
  // eu-stack is not run on a rank in a container (RunNative): gdb prints its native stacks.
  request.native = job_->NativeByGdb(rank_index) || (python && !request.python);
  request.index_dir = job_->gdb_index_dir;
  request.go_file = go_file;
  request.go_wait = kGoWait;
  request.timeout = kPythonTimeout;
  request.as = RankFolder(rank.process) +
               (worker != 0 ? "/worker-" + std::to_string(worker) + "/gdb.txt" : "/gdb.txt");
  return GdbCommand(request);
}

std::size_t RankCapture::ParallelGdbs() {
  static const std::size_t parallel =
      std::clamp<std::size_t>(std::thread::hardware_concurrency() / 2, 2, 8);
  return parallel;
}

std::string RankCapture::LateGoFile() const {
  // The go file the early gdbs were given, there since the window ended: a later gdb reads
  // its symbols first and attaches at once. None (no cache folder, the file not made): gdb
  // attaches at once and reads them while the rank is held.
  return job_->go_sent && !job_->go_failed && !job_->go_dir.empty() ? job_->GoFile()
                                                                    : std::string();
}

void RankCapture::OnGdbDone(std::size_t rank_index, CollectorResult result) {
  HoldOnly(result);
  if (result.status != CollectorStatus::kOk) {
    // A debugger killed at its deadline may leave the rank stopped (its SIGSTOP).
    env_.Signal(job_->report.ranks[rank_index].process.pid, SIGCONT);
  }
  job_->gdb[rank_index] = std::move(result);
}

void RankCapture::RunPython(std::size_t next) {
  if (next >= job_->need_gdb.size()) {
    return RunWorkers();
  }
  std::vector<config::CommandConfig> commands;
  std::vector<std::size_t> batch;
  for (std::size_t i = next; i < job_->need_gdb.size() && batch.size() < ParallelGdbs(); ++i) {
    commands.push_back(GdbFor(job_->need_gdb[i], job_->python_by_gdb[i], LateGoFile()));
    batch.push_back(job_->need_gdb[i]);
  }
  gdb_runner_.Run(std::move(commands), [this, next, batch](std::vector<CollectorResult> results) {
    for (std::size_t i = 0; i < batch.size(); ++i) {
      OnGdbDone(batch[i], std::move(results[i]));
    }
    RunPython(next + batch.size());
  });
}

void RankCapture::RunWorkers() {
  std::shared_ptr<Job> job = job_;
  // Which ranks wait for their workers is read from their Python stacks, whichever route gave
  // them (gdb, py-spy, the hook): parsed on the pool.
  env_.RunOnPool(
      [job] {
        for (std::size_t i = 0; i < job->children.size(); ++i) {
          const pid_t pid = job->report.ranks[i].process.pid;
          const CollectorResult* gdb = i < job->gdb.size() && job->gdb[i] ? &*job->gdb[i] : nullptr;
          if (job->children[i].empty() ||
              !diagnose::WaitsForDataLoader(MainPythonFrames(
                  gdb, i < job->py_spy.size() ? &job->py_spy[i] : nullptr,
                  i < job->hook_dumps.size() ? &job->hook_dumps[i] : nullptr, pid))) {
            continue;
          }
          // Still the child the capture saw at its start (not a pid reused since: gdb stops
          // what it attaches to), and still the rank's.
          const collect::ProcessTree now = collect::ProcessTree::Read(job->proc_root);
          for (const auto& [child, start] : job->children[i]) {
            const collect::ProcessStat* stat = now.Find(child);
            if (job->may_pause && job->workers.size() < kMaxWorkers && stat != nullptr &&
                stat->start_ticks == start && stat->ppid == job->report.ranks[i].process.pid) {
              job->workers.push_back({i, child, {}});
            }
          }
        }
      },
      [this, job] {
        if (job == job_) {
          RunWorkerGdb(0);
        }
      });
}

void RankCapture::RunWorkerGdb(std::size_t next) {
  if (next >= job_->workers.size()) {
    return Finish();
  }
  std::vector<config::CommandConfig> commands;
  const std::size_t end = std::min(job_->workers.size(), next + ParallelGdbs());
  for (std::size_t k = next; k < end; ++k) {
    const Job::WorkerGdb& worker = job_->workers[k];
    commands.push_back(GdbFor(worker.rank, /*python=*/true, LateGoFile(), worker.pid));
  }
  gdb_runner_.Run(std::move(commands), [this, next, end](std::vector<CollectorResult> results) {
    for (std::size_t k = next; k < end; ++k) {
      HoldOnly(results[k - next]);
      if (results[k - next].status != CollectorStatus::kOk) {
        env_.Signal(job_->workers[k].pid, SIGCONT);  // a debugger killed at its deadline
      }
      job_->workers[k].result = std::move(results[k - next]);
    }
    RunWorkerGdb(end);
  });
}

}  // namespace trainwatch::capture
