// RankCapture::Job: the state of the one capture under way. RankCapture and the pool tasks of
// its steps share it: after an Abort a task still running holds its own reference, and its
// loop-thread half sees that the job is no longer the current one and stops. A pool task
// writes it while it runs, the loop thread only before and after. Internal to
// rank_capture.cpp and rank_capture_gdb.cpp.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "capture/rank_capture.h"
#include "collect/flight_recorder.h"
#include "collect/python_hook.h"

namespace trainwatch::capture {

struct RankCapture::Job {
  std::vector<int> pids;
  std::vector<source::WriterProcess> remembered;
  std::vector<collect::RankProcess> exited;  // ranks gone before the capture
  diagnose::JobClues clues;
  std::string gdb_index_dir;  // gdb's index cache; empty: none
  bool may_pause = true;      // eu-stack and gdb may stop a rank (RankCapture::Run)
  std::size_t max_ranks = 16;
  std::shared_ptr<const collect::Redactor> redactor;
  Done done;
  SteadyTime started;
  collect::RankMap map;
  std::vector<std::optional<std::uint64_t>> ticks_before;
  SteadyTime sampled_at;
  RankReport report;
  // Per rank (as in map.ranks): the tools' results.
  std::vector<collect::CollectorResult> native;
  std::vector<collect::CollectorResult> py_spy;
  std::vector<std::optional<collect::CollectorResult>> gdb;
  // Per rank: its children (DataLoader workers, as the tree showed them), at most
  // kMaxWorkersPerRank; and gdb's Python stacks of those of the ranks waiting for them.
  std::vector<std::vector<std::pair<pid_t, std::uint64_t>>> children;  // pid, start ticks
  struct WorkerGdb {
    std::size_t rank = 0;
    pid_t pid = 0;
    collect::CollectorResult result;
  };
  std::vector<WorkerGdb> workers;
  // The device utilisation queries, a CPU window apart (DeviceUtilizationCommands' order).
  std::vector<collect::CollectorResult> devices_first;
  std::vector<collect::CollectorResult> devices_second;
  // Per rank: its Flight Recorder poked (or why not), and its dump.
  std::vector<std::optional<collect::FlightRecorderTarget>> recorders;
  std::vector<std::string> recorder_why;
  std::vector<std::optional<std::string>> recorder_dumps;
  // Per rank: the CPython helper gdb may source for py-bt (empty: none; its Python stacks then
  // come from py-spy or the hook, or not at all), and why there is none.
  std::vector<std::string> python_helpers;
  // Per rank: whether it runs in a container (another root), and there its executable's copy
  // for gdb and its debug information's folder (container_files.h), else empty.
  std::vector<bool> in_container;
  std::vector<std::string> exe_copies;
  std::vector<std::string> debug_dirs;
  std::vector<std::string> python_helper_why;
  // Per rank: the Python hook found (or why not), and what it wrote when signalled.
  std::vector<std::optional<collect::PythonHook>> hooks;
  std::vector<std::string> hook_why;
  std::vector<std::string> hook_dumps;
  bool py_spy_installed = false;  // on PATH, as the capture starts
  bool native_by_gdb = false;     // eu-stack is not installed: gdb prints native stacks too
  // Whether gdb prints rank i's native stacks: eu-stack is missing, or the rank is in a
  // container, whose libraries eu-stack reads at our paths.
  bool NativeByGdb(std::size_t i) const {
    return native_by_gdb || (i < in_container.size() && in_container[i]);
  }
  // The ranks gdb runs for after the window (by rank index), and for each whether it prints
  // the Python stacks too (else native only).
  std::vector<std::size_t> need_gdb;
  std::vector<bool> python_by_gdb;
  // The ranks whose gdb was started with the window (ParallelGdbs() at most): it reads the
  // interpreter's symbols while the rank runs and attaches once `go_file` exists.
  std::vector<std::size_t> early_gdb;
  std::vector<bool> early_python;  // for each of early_gdb: py-bt asked
  std::vector<bool> wants_python;  // per rank: neither py-spy nor a hook gave its Python stacks
  std::string go_dir;              // mkdtemp'd; removed when the capture ends
  SteadyTime go_at{};
  bool go_sent = false;
  bool go_failed = false;       // the go file could not be made
  bool early_done = true;       // the early gdbs have ended (or none started)
  bool second_sampled = false;  // the devices' second sample is in
  bool python_started = false;  // the gdbs after the window have started
  std::string proc_root;
  collect::RedactionCounts counts;  // of the environments written
  // The CPU window is over, and the tools that read without stopping a rank are done: gdb
  // attaches when both are.
  bool window_over = false;
  bool wait_sampling = false;  // a wait-state sample is being read on the pool
  bool readers_done = false;

  ~Job() {
    if (!go_dir.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(go_dir, ignored);
    }
  }
  std::string GoFile() const { return go_dir + "/go"; }
};

}  // namespace trainwatch::capture
