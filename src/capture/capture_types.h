// What a capture is asked for and what it gives: the value types the capture machinery
// (capture/capturer.h) takes and returns, apart from it, so that what records or counts a
// capture's outcome (ops/, incident/) needs no part of the machinery.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cluster/peer_record.h"
#include "core/env.h"
#include "detect/incident.h"
#include "diagnose/stack_verdict.h"
#include "diagnose/suspects.h"
#include "diagnose/wait_straggler.h"
#include "source/writers.h"

namespace trainwatch::capture {

// A progress bar's recent history, for the report's timeline: when it advanced (its last
// ProgressTracker::kIntervals advances, on the wall clock), where it stands.
inline constexpr std::size_t kMaxLanes = 64;
struct ProgressLane {
  std::string stream;              // the file path, "wrap:stderr"...
  std::string bar;                 // "'train' at 41/100"
  std::optional<int> rank;         // from the bar's prefix ("[rank3]:")
  std::vector<int> pids;           // the stream's writers
  std::vector<WallTime> advances;  // oldest first; empty when it never advanced
  WallTime first_seen{};
  bool complete = false;
};

struct CaptureRequest {
  detect::Incident incident;
  // The job's incidents on every node as this node knows them (the records it published or
  // read on the shared directory), oldest first: the report's view of the job.
  std::vector<cluster::PeerRecord> job_incidents;
  std::vector<std::string> log_files;     // the watched files, for their tails
  std::vector<std::string> watched_dirs;  // for disk usage
  std::vector<int> pids;                  // training processes known (writers, wrapped command)
  // What was read of them while they ran (command line, environment), for those gone by now.
  std::vector<source::WriterProcess> remembered;
  // The ranks' progress bars as last seen, for the suspects (diagnose::Diagnose).
  std::vector<diagnose::RankProgress> progress;
  std::vector<ProgressLane> lanes;       // at most kMaxLanes, the bars updated last
  std::string container;                 // docker container of the job, if known
  std::string reason;                    // manual snapshots
  std::vector<std::string> extra_logs;   // `snapshot --log`
  std::vector<std::string> extra_paths;  // `snapshot --copy`
  // Whether the ranks' stacks may be taken by the tools that stop a rank while they read
  // (eu-stack, gdb): a failure's capture, and a snapshot with --stacks. Else only py-spy
  // --nonblocking, the Python hooks and /proc are read.
  bool pause_ranks = true;
};

// A device management tool (hl-smi, nvidia-smi, npu-smi) a capture ran, and whether it
// answered: one that does not is evidence of a wedged device (watch/device_tool_watch.h).
struct DeviceToolRun {
  std::string tool;  // "hl-smi"
  std::string name;  // the collector: "hl-smi-q"
  bool answered = false;
  bool timed_out = false;  // killed at its deadline
  bool stuck = false;      // would not die even of SIGKILL: in uninterruptible sleep
  double deadline_seconds = 0;
};

struct CaptureOutcome {
  std::string incident_id;
  std::string path;  // empty when no bundle was written
  std::uint64_t bytes = 0;
  bool reduced = false;
  std::string error;              // why there is no bundle, or why it is reduced
  double capture_seconds = 0;     // from the start of the capture
  double since_first_firing = 0;  // from the incident's first firing line to the bundle
  // The same to the early bundle (written while the ranks' stacks were still being taken,
  // under the same name, and replaced by the complete one); 0 when there was none.
  double early_since_first_firing = 0;
  std::vector<std::string> deleted;         // old bundles removed to make room
  std::vector<std::string> timed_out;       // collectors killed at their deadline or abandoned
  std::vector<DeviceToolRun> device_tools;  // the device tools it ran, in order
  // The ranks (capture.stacks): where each group of ranks is, and the suspects.
  std::string ranks_summary;  // "ranks 0-2: all_reduce at train.py:88; rank 3: sleep at ..."
  std::vector<diagnose::Suspect> suspects;
  std::optional<diagnose::StackVerdict> stacks_say;  // what the stacks say the hang is
  std::string roster;  // "world size 4: ranks 0-2 alive; rank 3 exited (killed by signal 9 ...)"
  std::string devices_note;  // busy devices during the capture: "a long compile or step ...?"
  double ranks_seconds = 0;
  // Where this node's ranks waited, summed (a capture that sampled them: one that stopped no
  // rank): what the job's nodes are compared by (diagnose::SlowNodeByWaits).
  std::optional<diagnose::NodeWaits> waiting;
  std::string host;  // where it was captured
};

}  // namespace trainwatch::capture
