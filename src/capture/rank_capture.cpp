#include "capture/rank_capture.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>

#include "collect/device_utilization.h"
#include "collect/flight_recorder.h"
#include "collect/python_hook.h"
#include "collect/stack_text.h"
#include "core/proc_files.h"

namespace trainwatch::capture {
namespace {

using collect::CollectorResult;
using collect::CollectorStatus;

std::string PythonOf(pid_t pid, const std::string& proc_root) {
  std::error_code error;
  const std::string exe =
      std::filesystem::read_symlink(ProcPath(proc_root, pid, "exe"), error).string();
  const std::size_t slash = exe.rfind('/');
  return error || exe.empty() ? "python3" : exe.substr(slash == std::string::npos ? 0 : slash + 1);
}

// The remembered writers that are gone now and had a rank of the same kind as the map's ranks,
// which none of those has: the ranks that exited (crashed) before the capture.
std::vector<collect::RankProcess> ExitedRanks(const std::vector<source::WriterProcess>& remembered,
                                              const collect::ProcessTree& tree,
                                              const collect::RankMap& map) {
  std::vector<collect::RankProcess> exited;
  for (const source::WriterProcess& writer : remembered) {
    const collect::RankIdentity identity = collect::ParseRankIdentity(writer.environ);
    if (tree.Find(writer.pid) != nullptr || !identity.rank ||
        (!map.ranks.empty() && map.ranks.front().rank_source != identity.rank_source)) {
      continue;
    }
    auto same_rank = [&](const collect::RankProcess& other) { return other.rank == identity.rank; };
    if (std::any_of(map.ranks.begin(), map.ranks.end(), same_rank) ||
        std::any_of(exited.begin(), exited.end(), same_rank)) {
      continue;
    }
    collect::RankProcess process;
    process.pid = writer.pid;
    process.rank = identity.rank;
    process.rank_source = identity.rank_source;
    process.identity = identity;
    process.comm = writer.comm;
    process.cmdline = writer.cmdline;
    while (!process.cmdline.empty() && process.cmdline.back() == '\0') {
      process.cmdline.pop_back();
    }
    std::replace(process.cmdline.begin(), process.cmdline.end(), '\0', ' ');
    process.environ = writer.environ;
    exited.push_back(std::move(process));
  }
  return exited;
}

}  // namespace

struct RankCapture::Job {
  std::vector<int> pids;
  std::vector<source::WriterProcess> remembered;
  std::vector<collect::RankProcess> exited;  // ranks gone before the capture
  diagnose::JobClues clues;
  std::string gdb_index_dir;  // gdb's index cache; empty: none
  std::shared_ptr<const collect::Redactor> redactor;
  Done done;
  SteadyTime started;
  collect::RankMap map;
  std::vector<std::optional<std::uint64_t>> ticks_before;
  SteadyTime sampled_at;
  RankReport report;
  // Per rank (as in map.ranks): the tools' results.
  std::vector<CollectorResult> native;
  std::vector<CollectorResult> py_spy;
  std::vector<std::optional<CollectorResult>> gdb;
  // The device utilisation queries, a CPU window apart (DeviceUtilizationCommands' order).
  std::vector<CollectorResult> devices_first;
  std::vector<CollectorResult> devices_second;
  // Per rank: its Flight Recorder poked (or why not), and its dump.
  std::vector<std::optional<collect::FlightRecorderTarget>> recorders;
  std::vector<std::string> recorder_why;
  std::vector<std::optional<std::string>> recorder_dumps;
  // Per rank: the Python hook found (or why not), and what it wrote when signalled.
  std::vector<std::optional<collect::PythonHook>> hooks;
  std::vector<std::string> hook_why;
  std::vector<std::string> hook_dumps;
  std::vector<std::size_t> need_gdb;  // ranks gdb runs for (by rank index)
  std::vector<bool> python_by_gdb;    // for each of need_gdb: py-bt too (else native only)
  bool native_by_gdb = false;         // eu-stack is not installed: gdb prints native stacks too
  std::string proc_root;
  collect::RedactionCounts counts;  // of the environments written
};

RankCapture::RankCapture(Env& env) : env_(env), runner_(env) {}

RankCapture::~RankCapture() { Abort(); }

void RankCapture::Abort() {
  runner_.Abort();
  timer_.reset();
  job_.reset();  // a pool task still holds its own reference
}

void RankCapture::Run(std::vector<int> pids, std::vector<source::WriterProcess> remembered,
                      diagnose::JobClues clues, std::shared_ptr<const collect::Redactor> redactor,
                      Done done) {
  auto job = std::make_shared<Job>();
  job->clues = std::move(clues);
  job->gdb_index_dir = gdb_index_dir_;
  job->pids = std::move(pids);
  job->remembered = std::move(remembered);
  job->redactor = std::move(redactor);
  job->done = std::move(done);
  job->proc_root = env_.proc_root();
  job->started = env_.SteadyNow();
  job_ = job;
  env_.RunOnPool(
      [job, &env = env_] {
        const collect::ProcessTree tree = collect::ProcessTree::Read(job->proc_root);
        job->map = collect::BuildRankMap(job->pids, tree, job->proc_root);
        job->report.launchers = job->map.launchers;
        job->report.notes = job->map.notes;
        job->exited = ExitedRanks(job->remembered, tree, job->map);
        if (std::error_code error;
            !job->gdb_index_dir.empty() && !job->map.ranks.empty() &&
            !std::filesystem::create_directories(job->gdb_index_dir, error) && error) {
          job->gdb_index_dir.clear();  // gdb runs without its cache
        }
        for (const collect::RankProcess& rank : job->map.ranks) {
          job->ticks_before.push_back(collect::ReadCpuTicks(rank.pid, job->proc_root));
        }
        // The Flight Recorders dump while the rest is taken; their dumps are read at the end.
        for (const collect::RankProcess& rank : job->map.ranks) {
          std::string why = "its rank is unknown";
          std::optional<collect::FlightRecorderTarget> target;
          if (rank.rank) {
            target = collect::FindFlightRecorder(rank.pid, *rank.rank, rank.environ, job->proc_root,
                                                 why);
          }
          if (target && !collect::PokeFlightRecorder(*target, why)) {
            target.reset();
          }
          job->recorders.push_back(std::move(target));
          job->recorder_why.push_back(std::move(why));
        }
        job->sampled_at = env.SteadyNow();
      },
      [this, job] {
        if (job != job_) {
          return;  // aborted
        }
        if (job->map.ranks.empty()) {
          return Finish();
        }
        runner_.Run(collect::DeviceUtilizationCommands(),
                    [this](std::vector<CollectorResult> results) {
                      job_->devices_first = std::move(results);
                      timer_ = env_.NewTimer([this] { SampleAgain(); });
                      timer_->Start(kCpuWindow, {});
                    });
      });
}

void RankCapture::SampleAgain() {
  std::shared_ptr<Job> job = job_;
  env_.RunOnPool(
      [job, &env = env_] {
        const double seconds =
            std::chrono::duration<double>(env.SteadyNow() - job->sampled_at).count();
        job->report.cpu_window_seconds = seconds;
        const double ticks_per_second = static_cast<double>(::sysconf(_SC_CLK_TCK));
        for (std::size_t i = 0; i < job->map.ranks.size(); ++i) {
          RankEvidence evidence;
          evidence.process = job->map.ranks[i];
          const std::optional<std::uint64_t> after =
              collect::ReadCpuTicks(evidence.process.pid, job->proc_root);
          evidence.alive = after.has_value();
          if (after && job->ticks_before[i] && seconds > 0) {
            evidence.cpu_percent = 100.0 * static_cast<double>(*after - *job->ticks_before[i]) /
                                   ticks_per_second / seconds;
          }
          job->report.ranks.push_back(std::move(evidence));
        }
      },
      [this, job] {
        if (job != job_) {
          return;
        }
        runner_.Run(collect::DeviceUtilizationCommands(),
                    [this](std::vector<CollectorResult> results) {
                      job_->devices_second = std::move(results);
                      RunNative();
                    });
      });
}

std::vector<config::CommandConfig> RankCapture::PerRank(
    const std::string& tool, const std::vector<std::string>& argv_before_pid) const {
  std::vector<config::CommandConfig> commands;
  for (const RankEvidence& rank : job_->report.ranks) {
    config::CommandConfig command;
    command.name = tool;
    command.argv = argv_before_pid;
    command.argv.push_back(std::to_string(rank.process.pid));
    command.as = RankFolder(rank.process) + "/" + tool + ".txt";
    command.timeout = kNativeTimeout;
    commands.push_back(std::move(command));
  }
  return commands;
}

void RankCapture::RunNative() {
  // eu-stack stops each thread for the moment it takes to read its stack.
  std::vector<config::CommandConfig> commands = PerRank("eu-stack", {"eu-stack", "-p"});
  runner_.Run(std::move(commands), [this](std::vector<CollectorResult> results) {
    job_->native = std::move(results);
    job_->native_by_gdb =
        !job_->native.empty() && job_->native.front().status == CollectorStatus::kMissing;
    RunPySpy();
  });
}

void RankCapture::RunPySpy() {
  // --nonblocking: py-spy reads the interpreter's memory without stopping the rank.
  std::vector<config::CommandConfig> commands =
      PerRank("py-spy", {"py-spy", "dump", "--nonblocking", "--pid"});
  runner_.Run(std::move(commands), [this](std::vector<CollectorResult> results) {
    job_->py_spy = std::move(results);
    FindHooks();
  });
}

void RankCapture::FindHooks() {
  std::shared_ptr<Job> job = job_;
  env_.RunOnPool(
      [job] {
        const std::size_t count = job->report.ranks.size();
        job->hooks.resize(count);
        job->hook_why.resize(count);
        for (std::size_t i = 0; i < count; ++i) {
          if (job->py_spy[i].status != CollectorStatus::kOk) {
            const collect::RankProcess& process = job->report.ranks[i].process;
            job->hooks[i] = collect::FindPythonHook(process.pid, process.environ, job->proc_root,
                                                    job->hook_why[i]);
          }
        }
      },
      [this, job] {
        if (job != job_) {
          return;
        }
        bool signalled = false;
        for (std::size_t i = 0; i < job->hooks.size(); ++i) {
          if (job->hooks[i]) {
            env_.Signal(job->report.ranks[i].process.pid, job->hooks[i]->signal);
            signalled = true;
          }
        }
        if (!signalled) {
          return ReadHooks();
        }
        // faulthandler writes from the signal handler at once; this is for the scheduler.
        timer_ = env_.NewTimer([this] { ReadHooks(); });
        timer_->Start(kHookWait, {});
      });
}

void RankCapture::ReadHooks() {
  std::shared_ptr<Job> job = job_;
  env_.RunOnPool(
      [job] {
        job->hook_dumps.resize(job->hooks.size());
        for (std::size_t i = 0; i < job->hooks.size(); ++i) {
          if (job->hooks[i]) {
            job->hook_dumps[i] = collect::ReadHookDump(*job->hooks[i]);
          }
        }
      },
      [this, job] {
        if (job != job_) {
          return;
        }
        job->gdb.resize(job->report.ranks.size());
        for (std::size_t i = 0; i < job->py_spy.size(); ++i) {
          const bool by_hook = !collect::ParseFaulthandler(job->hook_dumps[i]).empty();
          if ((job->py_spy[i].status != CollectorStatus::kOk && !by_hook) || job->native_by_gdb) {
            job->need_gdb.push_back(i);
            job->python_by_gdb.push_back(!by_hook && job->py_spy[i].status != CollectorStatus::kOk);
          }
        }
        RunPython(0);
      });
}

void RankCapture::RunPython(std::size_t next) {
  if (next >= job_->need_gdb.size()) {
    return Finish();
  }
  std::vector<config::CommandConfig> commands;
  std::vector<std::size_t> batch;
  for (std::size_t i = next; i < job_->need_gdb.size() && batch.size() < kParallelAttach; ++i) {
    const std::size_t rank_index = job_->need_gdb[i];
    const RankEvidence& rank = job_->report.ranks[rank_index];
    config::CommandConfig command;
    command.name = "gdb";
    // -nx: no ~/.gdbinit; the auto-load path lets the CPython helpers (python3.X-dbg's
    // python3.X-gdb.py) load; debuginfod would go to the network.
    command.argv = {"gdb",
                    "-p",
                    std::to_string(rank.process.pid),
                    "-batch",
                    "-nx",
                    "-iex",
                    "set auto-load safe-path /",
                    "-iex",
                    "set debuginfod enabled off"};
    if (!job_->gdb_index_dir.empty()) {
      command.argv.insert(command.argv.end(),
                          {"-iex", "set index-cache directory " + job_->gdb_index_dir, "-iex",
                           "set index-cache enabled on"});
    }
    if (job_->python_by_gdb[i]) {
      command.argv.insert(command.argv.end(), {"-ex", "thread apply all py-bt"});
    }
    if (job_->native_by_gdb) {
      command.argv.insert(command.argv.end(), {"-ex", "thread apply all bt"});
    }
    command.as = RankFolder(rank.process) + "/gdb.txt";
    command.timeout = kPythonTimeout;
    commands.push_back(std::move(command));
    batch.push_back(rank_index);
  }
  runner_.Run(std::move(commands), [this, next, batch](std::vector<CollectorResult> results) {
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (results[i].status != CollectorStatus::kOk) {
        // A debugger killed at its deadline may leave the rank stopped (its SIGSTOP).
        env_.Signal(job_->report.ranks[batch[i]].process.pid, SIGCONT);
      }
      job_->gdb[batch[i]] = std::move(results[i]);
    }
    RunPython(next + batch.size());
  });
}

void RankCapture::Finish() {
  std::shared_ptr<Job> job = job_;
  timer_.reset();
  job->report.seconds = std::chrono::duration<double>(env_.SteadyNow() - job->started).count();
  env_.RunOnPool(
      [job] {
        for (collect::RankProcess& process : job->exited) {
          RankEvidence evidence;
          evidence.process = std::move(process);
          evidence.alive = false;
          job->report.ranks.push_back(std::move(evidence));
        }
        std::vector<RankToolResults> tools(job->report.ranks.size());
        job->recorder_dumps.resize(tools.size());
        std::vector<std::string> pythons;
        for (std::size_t i = 0; i < tools.size(); ++i) {
          tools[i].native = i < job->native.size() ? &job->native[i] : nullptr;
          tools[i].py_spy = i < job->py_spy.size() ? &job->py_spy[i] : nullptr;
          tools[i].gdb = i < job->gdb.size() && job->gdb[i] ? &*job->gdb[i] : nullptr;
          if (i < job->recorders.size()) {
            if (job->recorders[i]) {
              job->recorder_dumps[i] = collect::ReadFlightRecorderDump(*job->recorders[i]);
              if (!job->recorder_dumps[i]) {
                job->recorder_why[i] = "poked, but no new dump in " + job->recorders[i]->dump;
              }
            }
            tools[i].flight_recorder = &job->recorder_dumps[i];
            tools[i].flight_recorder_why = job->recorder_why[i];
          }
          if (i < job->hook_dumps.size()) {
            tools[i].faulthandler = &job->hook_dumps[i];
            tools[i].hook_why = job->hook_why[i];
          }
          pythons.push_back(PythonOf(job->report.ranks[i].process.pid, job->proc_root));
        }
        for (std::size_t i = 0; i < job->devices_first.size() && i < job->devices_second.size();
             ++i) {
          const CollectorResult& first = job->devices_first[i];
          const CollectorResult& second = job->devices_second[i];
          if (first.status == CollectorStatus::kOk && second.status == CollectorStatus::kOk &&
              !first.artifacts.empty() && !second.artifacts.empty()) {
            const std::string tool = first.name.substr(0, first.name.find("-utilization"));
            std::vector<collect::DeviceUtilization> pairs = collect::PairSamples(
                tool, collect::ParseUtilization(tool, first.artifacts.front().content),
                collect::ParseUtilization(tool, second.artifacts.front().content));
            job->report.devices.insert(job->report.devices.end(), pairs.begin(), pairs.end());
          }
        }
        job->report.devices_note =
            collect::BusyDevicesNote(job->report.devices, job->report.cpu_window_seconds);
        AssembleRankReport(job->report, std::move(tools), *job->redactor, job->counts, pythons,
                           job->clues);
      },
      [this, job] {
        if (job != job_) {
          return;  // aborted
        }
        job_.reset();
        job->done(std::move(job->report), job->counts);
      });
}

}  // namespace trainwatch::capture
