#include "watch/blocked_watch.h"

#include <set>

#include "collect/process_tree.h"
#include "core/printable.h"
#include "core/proc_files.h"

namespace trainwatch::watch {
namespace {

// Whether `process` is still the process it was (not a later one with its pid).
bool StillTheSame(const WatchedProcess& process, const std::string& proc_root) {
  if (process.start_ticks == 0) {
    return true;
  }
  const Result<ProcText> stat = ReadProcFile(ProcPath(proc_root, process.pid, "stat"), 4096);
  const std::optional<collect::ProcessStat> parsed =
      stat ? collect::ParseProcessStat(stat->text) : std::nullopt;
  return parsed && parsed->start_ticks == process.start_ticks;
}

}  // namespace

std::string BlockedLine(const WatchedProcess& process, const collect::BlockedThreads::Stuck& stuck,
                        const std::string& thread_comm, const collect::BlockedCall& call) {
  std::string line;
  if (process.rank) {
    line += "[rank" + std::to_string(*process.rank) + "]: ";
  }
  line += "trainwatch: " + Printable(process.comm.empty() ? "a process" : process.comm) + " (pid " +
          std::to_string(process.pid);
  if (stuck.tid != process.pid) {
    line += ", thread " + std::to_string(stuck.tid);
    if (!thread_comm.empty()) {
      line += ' ';
      line += Printable(thread_comm);
    }
  }
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(stuck.blocked).count();
  line += ") has been blocked in the kernel for " + std::to_string(seconds) +
          " s, never woken: " + collect::FormatBlockedCall(call);
  return line;
}

BlockedWatch::BlockedWatch(Env& env, Emit emit)
    : env_(env),
      emit_(std::move(emit)),
      threads_(std::make_shared<collect::BlockedThreads>(after_)) {}

BlockedWatch::~BlockedWatch() { *alive_ = false; }

void BlockedWatch::Tick(SteadyTime now, std::vector<WatchedProcess> processes) {
  if (looking_ && now - last_look_ > kLookDeadline) {
    ++stalled_looks_;
    if (!stalled_since_) {
      stalled_since_ = last_look_;
    }
    looking_ = false;
    threads_ = std::make_shared<collect::BlockedThreads>(after_);
  }
  if (looking_ || (looks_ > 0 && now - last_look_ < kEvery)) {
    return;
  }
  looking_ = true;
  const std::uint64_t generation = ++generation_;
  last_look_ = now;
  ++looks_;
  threads_->set_after(after_);
  auto lines = std::make_shared<std::vector<Report>>();
  env_.RunOnPool(
      [threads = threads_, processes = std::move(processes), lines, now,
       proc_root = env_.proc_root()] {
        std::set<pid_t> looked;
        for (const WatchedProcess& process : processes) {
          if (!StillTheSame(process, proc_root)) {
            continue;
          }
          looked.insert(process.pid);
          const std::optional<collect::BlockedThreads::Stuck> stuck = threads->Observe(
              process.pid, collect::ReadThreadProgress(process.pid, proc_root), now);
          if (!stuck) {
            continue;
          }
          std::string thread_comm;
          if (stuck->tid != process.pid) {
            const Result<std::string> comm =
                ReadProcComm(stuck->tid, proc_root + "/" + std::to_string(process.pid) + "/task");
            thread_comm = comm ? *comm : std::string();
          }
          lines->push_back({process.pid, BlockedLine(process, *stuck, thread_comm,
                                                     collect::DescribeBlockedCall(
                                                         process.pid, stuck->tid, proc_root))});
        }
        threads->KeepOnly(looked);
      },
      [this, alive = alive_, lines, generation] {
        if (!*alive || generation != generation_) {
          return;
        }
        looking_ = false;
        stalled_since_.reset();
        if (!lines->empty()) {
          emit_(*lines);
        }
      });
}

}  // namespace trainwatch::watch
