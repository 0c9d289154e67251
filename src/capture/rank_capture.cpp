#include "capture/rank_capture.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "capture/gdb_command.h"
#include "capture/gdb_python_helper.h"
#include "capture/rank_capture_job.h"
#include "capture/rank_devices.h"
#include "capture/rank_selection.h"
#include "collect/device_utilization.h"
#include "collect/flight_recorder.h"
#include "collect/python_hook.h"
#include "collect/stack_text.h"
#include "collect/wait_state.h"
#include "core/deadline_call.h"
#include "core/proc_files.h"

namespace trainwatch::capture {
namespace {

using collect::CollectorResult;
using collect::CollectorStatus;

}  // namespace

RankCapture::RankCapture(Env& env) : env_(env), runner_(env), gdb_runner_(env) {}

RankCapture::~RankCapture() { Abort(); }

void RankCapture::Abort() {
  runner_.Abort();
  if (job_ && job_->go_sent && !gdb_runner_.Running().empty()) {
    // A debugger killed while attached may leave its rank stopped.
    gdb_runner_.Abort();
    for (const RankEvidence& rank : job_->report.ranks) {
      env_.Signal(rank.process.pid, SIGCONT);
    }
    for (const Job::WorkerGdb& worker : job_->workers) {
      env_.Signal(worker.pid, SIGCONT);  // a DataLoader worker gdb held
    }
  }
  gdb_runner_.Abort();
  timer_.reset();
  wait_timer_.reset();
  hook_timer_.reset();
  job_.reset();  // a pool task still holds its own reference
}

void RankCapture::Run(std::vector<int> pids, std::vector<source::WriterProcess> remembered,
                      diagnose::JobClues clues, bool may_pause,
                      std::shared_ptr<const collect::Redactor> redactor, Done done) {
  auto job = std::make_shared<Job>();
  job->clues = std::move(clues);
  job->may_pause = may_pause;
  job->gdb_index_dir = gdb_index_dir_;
  job->max_ranks = max_ranks_;
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
        SkipRanksPastTheCap(job->map, job->max_ranks);
        job->exited = ExitedRanks(job->remembered, tree, job->map, job->pids);
        ForgetRanklessNamedExited(job->map, job->exited);
        job->report.launchers = job->map.launchers;
        job->report.notes = job->map.notes;
        if (!job->may_pause && !job->map.ranks.empty()) {
          job->report.notes.push_back(
              "no rank was stopped: eu-stack and gdb, which hold a rank while they read its "
              "stacks, did not run (a snapshot runs them only with --stacks); the Python "
              "stacks come from py-spy --nonblocking or the job's Python hook where there is one");
        }
        if (std::error_code error;
            !job->gdb_index_dir.empty() && !job->map.ranks.empty() &&
            !std::filesystem::create_directories(job->gdb_index_dir, error) && error) {
          job->gdb_index_dir.clear();  // gdb runs without its cache
        }
        for (const collect::RankProcess& rank : job->map.ranks) {
          std::vector<std::pair<pid_t, std::uint64_t>> children;  // and each one's start
          for (pid_t child : tree.Children(rank.pid)) {
            if (children.size() < kMaxWorkersPerRank) {
              children.emplace_back(child, tree.Find(child)->start_ticks);
            }
          }
          job->children.push_back(std::move(children));
          job->ticks_before.push_back(collect::ReadCpuTicks(rank.pid, job->proc_root));
          RankEvidence evidence;
          evidence.process = rank;
          job->report.ranks.push_back(std::move(evidence));
        }
        // The Flight Recorders dump while the rest is taken; their dumps are read at the end.
        // The rank names these files: each step has a deadline (a hung file system holds a
        // read in the kernel), past which it is left behind, counted against the budget of
        // the rank's user (another user's wedged reads never refuse this one's), and the
        // capture goes on.
        for (const collect::RankProcess& rank : job->map.ranks) {
          std::string why = "its rank is unknown";
          std::optional<collect::FlightRecorderTarget> target;
          if (rank.rank) {
            using Found = std::pair<std::optional<collect::FlightRecorderTarget>, std::string>;
            std::optional<Found> found = CallWithDeadline<Found>(
                [pid = rank.pid, number = *rank.rank, environ = rank.environ,
                 proc_root = job->proc_root] {
                  std::string not_found;
                  std::optional<collect::FlightRecorderTarget> poked =
                      collect::FindFlightRecorder(pid, number, environ, proc_root, not_found);
                  if (poked && !collect::PokeFlightRecorder(*poked, not_found)) {
                    poked.reset();
                  }
                  return Found(std::move(poked), std::move(not_found));
                },
                kRankFileDeadline, UserDeadlineBudget(ProcessRealUid(job->proc_root, rank.pid)),
                why);
            if (found) {
              std::tie(target, why) = std::move(*found);
            }
          }
          job->recorders.push_back(std::move(target));
          job->recorder_why.push_back(std::move(why));
        }
        job->sampled_at = env.SteadyNow();
        for (const collect::RankProcess& rank : job->map.ranks) {
          using Found = std::pair<std::optional<collect::PythonHook>, std::string>;
          std::string why;
          std::optional<Found> found = CallWithDeadline<Found>(
              [pid = rank.pid, environ = rank.environ, proc_root = job->proc_root] {
                std::string not_found;
                std::optional<collect::PythonHook> hook =
                    collect::FindPythonHook(pid, environ, proc_root, not_found);
                return Found(std::move(hook), std::move(not_found));
              },
              kRankFileDeadline, UserDeadlineBudget(ProcessRealUid(job->proc_root, rank.pid)), why);
          job->hooks.push_back(found ? std::move(found->first) : std::nullopt);
          job->hook_why.push_back(found ? std::move(found->second) : why);
        }
        for (const collect::RankProcess& rank : job->map.ranks) {
          FindPythonHelper(*job, rank.pid);
        }
        job->py_spy_installed = OnPath("py-spy");
        job->native_by_gdb = !OnPath("eu-stack");
        if (job->map.ranks.empty()) {
          return;
        }
        // Where the early gdbs are told to attach: a folder of our own in gdb's cache (nobody
        // else can make the file appear). Without the cache, gdb runs after the window only.
        if (!job->gdb_index_dir.empty()) {
          RemoveGoDirsOfTheDead(job->gdb_index_dir);
          std::string go_dir = job->gdb_index_dir + "/go-" + std::to_string(::getpid()) + "-XXXXXX";
          if (::mkdtemp(go_dir.data()) != nullptr) {
            job->go_dir = go_dir;
          }
        }
      },
      [this, job] {
        if (job != job_) {
          return;  // aborted
        }
        if (job->map.ranks.empty()) {
          return Finish();
        }
        // The window runs while the tools that do not stop a rank take their stacks.
        timer_ = env_.NewTimer([this] {
          job_->window_over = true;
          wait_timer_.reset();
          if (job_->readers_done) {
            SampleAgain();
          }
        });
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            (job->may_pause ? kCpuWindow : kQuietWindow) - (env_.SteadyNow() - job->sampled_at));
        timer_->Start(std::max(std::chrono::milliseconds::zero(), left), {});
        if (!job->may_pause) {
          // Not while eu-stack stops the ranks: its pauses would read as a rank's own.
          wait_timer_ = env_.NewTimer([this] { SampleWaits(); });
          wait_timer_->Start(std::chrono::milliseconds::zero(), kWaitSampleEvery);
        }
        StartEarlyGdb();
        RunNative();
      });
}

void RankCapture::SampleWaits() {
  std::shared_ptr<Job> job = job_;
  if (!job || job->window_over || job->wait_sampling) {
    return;  // the window ended, or the last sample is still being read
  }
  job->wait_sampling = true;
  auto keys = std::make_shared<std::vector<std::string>>(job->map.ranks.size());
  env_.RunOnPool(
      [job, keys] {
        for (std::size_t i = 0; i < job->map.ranks.size(); ++i) {
          if (const std::optional<collect::WaitState> state =
                  collect::ReadWaitState(job->map.ranks[i].pid, job->proc_root)) {
            (*keys)[i] = collect::WaitKey(*state);
          }
        }
      },
      [job, keys] {
        job->wait_sampling = false;
        if (job->window_over) {
          return;  // past the window: its CPU share is measured without this sample
        }
        for (std::size_t i = 0; i < keys->size(); ++i) {
          if (!(*keys)[i].empty()) {
            ++job->report.ranks[i].waits[(*keys)[i]];
          }
        }
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
          RankEvidence& evidence = job->report.ranks[i];
          const std::optional<std::uint64_t> after =
              collect::ReadCpuTicks(evidence.process.pid, job->proc_root);
          evidence.alive = after.has_value();
          if (after && job->ticks_before[i] && seconds > 0) {
            evidence.cpu_percent = 100.0 * static_cast<double>(*after - *job->ticks_before[i]) /
                                   ticks_per_second / seconds;
          }
        }
        if (!job->go_dir.empty()) {
          // The early gdbs attach now; the later ones (and the workers') will find it there.
          std::ofstream go(job->GoFile());
          go.flush();
          job->go_failed = !go;
        }
      },
      [this, job] {
        if (job != job_) {
          return;
        }
        if (job->go_failed && !job->early_done) {
          // The early gdbs would wait in vain: they go, and their ranks are taken after.
          gdb_runner_.Abort();
          job->early_done = true;
        }
        job->go_sent = true;
        job->go_at = env_.SteadyNow();
        runner_.Run(collect::DeviceUtilizationCommands(),
                    [this](std::vector<CollectorResult> results) {
                      job_->devices_second = std::move(results);
                      job_->second_sampled = true;
                      MaybeRunPython();
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
  // The devices' first utilisation sample, and the native stacks: eu-stack stops each thread
  // only for the moment it takes to read its stack, which the CPU window can bear. Not for a
  // rank in a container: eu-stack would read our libraries for its own; gdb prints its stacks.
  std::vector<config::CommandConfig> commands = collect::DeviceUtilizationCommands();
  const std::size_t device_commands = commands.size();
  std::vector<config::CommandConfig> native = PerRank("eu-stack", {"eu-stack", "-p"});
  std::vector<bool> ran;  // per rank
  for (std::size_t i = 0; i < native.size(); ++i) {
    ran.push_back(job_->may_pause && (i >= job_->in_container.size() || !job_->in_container[i]));
    if (ran.back()) {
      commands.push_back(std::move(native[i]));
    }
  }
  runner_.Run(std::move(commands), [this, device_commands,
                                    ran](std::vector<CollectorResult> results) {
    job_->devices_first.assign(
        std::make_move_iterator(results.begin()),
        std::make_move_iterator(results.begin() + static_cast<std::ptrdiff_t>(device_commands)));
    job_->native.clear();
    std::size_t next = device_commands;
    for (const bool by_eu_stack : ran) {
      if (by_eu_stack) {
        job_->native.push_back(std::move(results[next++]));
      } else {
        CollectorResult skipped;
        skipped.name = "eu-stack";
        skipped.status = CollectorStatus::kSkipped;
        skipped.detail = !job_->may_pause
                             ? "it stops each thread while it reads; a snapshot runs it only "
                               "with --stacks"
                             : "the rank runs in a container, whose libraries eu-stack would "
                               "read at this host's paths; gdb prints its native stacks";
        job_->native.push_back(std::move(skipped));
      }
    }
    RunPySpy();
  });
}

void RankCapture::RunPySpy() {
  // --nonblocking: py-spy reads the interpreter's memory without stopping the rank.
  std::vector<config::CommandConfig> commands =
      PerRank("py-spy", {"py-spy", "dump", "--nonblocking", "--pid"});
  runner_.Run(std::move(commands), [this](std::vector<CollectorResult> results) {
    job_->py_spy = std::move(results);
    SignalHooks();
  });
}

void RankCapture::SignalHooks() {
  Job& job = *job_;
  bool signalled = false;
  for (std::size_t i = 0; i < job.hooks.size(); ++i) {
    if (job.py_spy[i].status == CollectorStatus::kOk) {
      job.hooks[i].reset();  // py-spy read it: no signal
    } else if (job.hooks[i]) {
      env_.Signal(job.report.ranks[i].process.pid, job.hooks[i]->signal);
      signalled = true;
    }
  }
  if (!signalled) {
    return ReadHooks();
  }
  // faulthandler writes from the signal handler at once; this is for the scheduler.
  hook_timer_ = env_.NewTimer([this] { ReadHooks(); });
  hook_timer_->Start(kHookWait, {});
}

void RankCapture::ReadHooks() {
  std::shared_ptr<Job> job = job_;
  env_.RunOnPool(
      [job] {
        job->hook_dumps.resize(job->hooks.size());
        for (std::size_t i = 0; i < job->hooks.size(); ++i) {
          if (job->hooks[i]) {
            std::string why;
            job->hook_dumps[i] =
                CallWithDeadline<std::string>(
                    [hook = *job->hooks[i]] { return collect::ReadHookDump(hook); },
                    kRankFileDeadline,
                    UserDeadlineBudget(
                        ProcessRealUid(job->proc_root, job->report.ranks[i].process.pid)),
                    why)
                    .value_or("");
          }
        }
      },
      [this, job] {
        if (job != job_) {
          return;
        }
        job->wants_python.assign(job->py_spy.size(), false);
        for (std::size_t i = 0; i < job->py_spy.size(); ++i) {
          const bool by_hook = !collect::ParseFaulthandler(job->hook_dumps[i]).empty();
          job->wants_python[i] = !by_hook && job->py_spy[i].status != CollectorStatus::kOk;
          const bool early =
              std::find(job->early_gdb.begin(), job->early_gdb.end(), i) != job->early_gdb.end();
          if (job->may_pause && !early && (job->wants_python[i] || job->NativeByGdb(i))) {
            job->need_gdb.push_back(i);
            job->python_by_gdb.push_back(job->wants_python[i]);
          }
        }
        // gdb stops a rank for as long as it reads: it attaches after the CPU window.
        job->readers_done = true;
        if (job->window_over) {
          SampleAgain();
        }
      });
}

void RankCapture::Finish() {
  std::shared_ptr<Job> job = job_;
  timer_.reset();
  hook_timer_.reset();
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
        // The dumps' budget over all ranks: a rank can make its dump as large as the cap.
        std::size_t dump_budget = collect::kMaxFlightRecorderDumps;
        for (std::size_t i = 0; i < tools.size(); ++i) {
          tools[i].native = i < job->native.size() ? &job->native[i] : nullptr;
          tools[i].py_spy = i < job->py_spy.size() ? &job->py_spy[i] : nullptr;
          tools[i].gdb = i < job->gdb.size() && job->gdb[i] ? &*job->gdb[i] : nullptr;
          for (Job::WorkerGdb& worker : job->workers) {
            if (worker.rank == i) {
              tools[i].workers.emplace_back(worker.pid, &worker.result);
            }
          }
          if (i < job->recorders.size()) {
            if (job->recorders[i]) {
              const std::size_t cap = std::min(collect::kMaxFlightRecorderDump, dump_budget);
              using Read = std::pair<std::optional<std::string>, std::string>;
              std::optional<Read> read = CallWithDeadline<Read>(
                  [target = *job->recorders[i], cap] {
                    std::string not_read;
                    std::optional<std::string> dump =
                        collect::ReadFlightRecorderDump(target, cap, not_read);
                    return Read(std::move(dump), std::move(not_read));
                  },
                  kRankFileDeadline,
                  // A rank gone by now (a crash) is charged to the budget of unknown users.
                  UserDeadlineBudget(
                      ProcessRealUid(job->proc_root, job->report.ranks[i].process.pid)),
                  job->recorder_why[i]);
              if (read) {
                std::tie(job->recorder_dumps[i], job->recorder_why[i]) = std::move(*read);
              }
              if (job->recorder_dumps[i]) {
                dump_budget -= job->recorder_dumps[i]->size();
              } else if (cap < collect::kMaxFlightRecorderDump) {
                job->recorder_why[i] += " (the capture's budget for dumps, " +
                                        std::to_string(collect::kMaxFlightRecorderDumps >> 20) +
                                        " MiB, is spent but " + std::to_string(cap) + " bytes)";
              }
            }
            tools[i].flight_recorder = &job->recorder_dumps[i];
            tools[i].flight_recorder_why = job->recorder_why[i];
          }
          if (i < job->hook_dumps.size()) {
            tools[i].faulthandler = &job->hook_dumps[i];
            tools[i].hook_why = job->hook_why[i];
          }
          if (i < job->python_helper_why.size()) {
            tools[i].python_helper_why = job->python_helper_why[i];
          }
          pythons.push_back(InterpreterNameOf(job->report.ranks[i].process.pid, job->proc_root));
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
        AttachRankDevices(job->report);
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
