// What a capture learnt of the ranks (RankCapture gathers it): per rank its identity, CPU
// share, stacks and the routes that gave them; the groups and suspects; and how it goes into
// the bundle (ranks/<rank>/..., ranks/summary.txt) and the manifest's "ranks". Pure; any
// thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collect/artifact.h"
#include "collect/device_utilization.h"
#include "collect/rank_map.h"
#include "collect/redactor.h"
#include "diagnose/stack_verdict.h"
#include "diagnose/suspects.h"

namespace trainwatch::capture {

struct RankEvidence {
  collect::RankProcess process;
  std::optional<double> cpu_percent;
  // Its main thread's states sampled over the CPU window (collect::WaitKey -> samples).
  std::map<std::string, int> waits;
  bool alive = true;
  std::string python_route;  // "py-spy", "faulthandler", "gdb"; empty when no route worked
  std::string native_route;  // "eu-stack", "gdb"
  // Why the routes before the one that worked (or all of them) did not: "py-spy: py-spy is
  // not installed here (not on PATH)".
  std::vector<std::string> route_notes;
  double paused_seconds = 0;  // how long debuggers held it stopped (their run time, at most)
  std::string where;          // its group's "all_reduce at train.py:88"
  // Its main thread's frames in the job's own code (not a library's), innermost first, at most
  // kMaxOwnFrames: "log_metrics at job.py:47". What the report's first screen shows of a culprit.
  std::vector<std::string> own_frames;
  // Its children whose Python stacks were taken (it waited for its DataLoader workers): pid
  // and where each one's main thread is.
  std::vector<std::pair<int, std::string>> workers;
  // The device it drives, as the capture's two samples found it (collect::DeviceOfRank); none
  // when its binding does not say, or another rank here would drive the same one.
  std::optional<collect::DeviceUtilization> device;
  std::string flight_recorder_file;  // "ranks/3/flight-recorder.pickle" when it dumped
  std::string flight_recorder_why;   // else why not
};

inline constexpr std::size_t kMaxOwnFrames = 6;

struct RankReport {
  std::vector<RankEvidence> ranks;
  std::vector<pid_t> launchers;
  std::vector<std::string> notes;  // processes that could not be read
  double cpu_window_seconds = 0;
  double seconds = 0;  // the whole ranks capture
  // Each device's utilisation at the start and a CPU window later (hl-smi, nvidia-smi), and
  // what busy ones say about a stall (collect/device_utilization.h).
  std::vector<collect::DeviceUtilization> devices;
  std::string devices_note;
  diagnose::RankDiagnosis diagnosis;
  // What the stacks say the hang is, when they say (diagnose/stack_verdict.h).
  std::optional<diagnose::StackVerdict> stack_verdict;
  // A job whose every rank runs here: the ranks of its WORLD_SIZE the capture never saw, alive
  // or exited (never started, or gone before the daemon saw them).
  std::vector<int> never_seen;
  std::optional<int> world_size;
  // "ranks": its artifacts (ranks/<rank>/..., ranks/summary.txt) and status.
  collect::CollectorResult result;
};

// The tools' results for one rank; null for a tool that did not run for it.
struct RankToolResults {
  collect::CollectorResult* native = nullptr;  // eu-stack
  collect::CollectorResult* py_spy = nullptr;
  collect::CollectorResult* gdb = nullptr;
  const std::string* faulthandler = nullptr;  // what the Python hook wrote when signalled
  std::string hook_why;                       // why there is no Python hook
  std::string python_helper_why;              // why gdb may load no CPython helper (empty: it may)
  const std::optional<std::string>* flight_recorder = nullptr;  // its dump, when it made one
  std::string flight_recorder_why;                              // why there is none
  // gdb's py-bt of its children (DataLoader workers), when it waited for them.
  std::vector<std::pair<int, collect::CollectorResult*>> workers;
};

// The folder of a rank in the bundle: "ranks/3", or "ranks/pid-4242" when its rank is unknown.
std::string RankFolder(const collect::RankProcess& process);

// Reads the tools' outputs (`tools[i]` for `report.ranks[i]`) into routes and stacks, names
// the groups and suspects, and fills `report.result` with every rank's files: the tools'
// outputs, cmdline.txt, environ.txt (redacted here, counted in `counts`), cpu.txt; and
// ranks/summary.txt. `python_of(i)` names rank i's interpreter ("python3.11"), for the
// package that would give gdb its py-bt. `clues`: see diagnose::Diagnose.
void AssembleRankReport(RankReport& report, std::vector<RankToolResults> tools,
                        const collect::Redactor& redactor, collect::RedactionCounts& counts,
                        const std::vector<std::string>& pythons,
                        const diagnose::JobClues& clues = {});

// The roster in one line: "world size 4: ranks 0-2 alive; rank 3 exited (killed by signal 9
// (SIGKILL))", with the ranks never seen; empty when no rank is known.
std::string RosterText(const RankReport& report);

// The main thread's Python frames (innermost first) of process `pid`, from the first route
// that gave them: py-spy, the hook's dump, gdb's py-bt (each may be null, or a tool that
// failed).
std::vector<collect::StackFrame> MainPythonFrames(const collect::CollectorResult* gdb,
                                                  const collect::CollectorResult* py_spy,
                                                  const std::string* hook_dump, long pid);

// The manifest's "ranks": {"ranks": [...], "groups": [...], "suspects": [...], ...} as JSON.
std::string RanksJson(const RankReport& report);

}  // namespace trainwatch::capture
