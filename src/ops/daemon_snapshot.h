// DaemonSnapshot: what the daemon is doing now, as plain values — its sources, files, streams
// and bars, its counters and hooks — taken by the daemon when `trainwatch status` asks or the
// metrics textfile is due. The renderers (StatusJson, DaemonMetricFamilies) read only this, so
// they never reach into the daemon and tests build one by hand. Value type; any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "collect/rank_map.h"
#include "detect/stream_detector.h"
#include "ops/daemon_counters.h"
#include "ops/hook_runner.h"
#include "rules/rule.h"
#include "source/writers.h"

namespace trainwatch::ops {

struct BarSnapshot {
  std::string key;  // the tracker's key: the bar's label, position or "step"
  std::string label;
  std::int64_t count = 0;
  std::optional<std::int64_t> total;
  bool complete = false;
  bool advanced = false;
  std::int64_t seconds_since_advance = 0;
  std::chrono::system_clock::time_point last_advance{};  // on the wall clock
  std::optional<double> interval_p99_seconds;            // its pace, once learnt (ProgressTracker)
  // Steps a second over the last kPaceShown (the median rate between its samples), once known.
  std::optional<double> steps_per_second;
  // A pace rule holds it slow: the steps a second it had before the slowdown.
  std::optional<double> slow_from_steps_per_second;
};

struct StreamSnapshot {
  std::string name;  // the file's path, "kmsg", "wrap:stdout"...
  std::uint64_t lines = 0;
  std::uint64_t bytes = 0;
  bool job_ended = false;
  std::int64_t seconds_since_output = 0;
  std::vector<BarSnapshot> bars;
  // The longest pause its bars made and came back from, unannounced (ProgressTracker): what the
  // learnt stall threshold is never shorter than 1.5 x; none before a second advance.
  std::optional<double> longest_pause_seconds;
  // The training loss read last (a metric rule's); none when none was.
  std::optional<detect::LineDetector::LastLoss> loss;
  // Files only.
  std::uint64_t offset = 0;
  std::uint64_t durable_offset = 0;
  std::optional<std::uint64_t> size;  // the open file's size now; none while released (in turn)
  // Bytes read from it, an unfinished last line too (offset stops before that line).
  std::uint64_t read_offset = 0;
  std::vector<source::WriterProcess> writers;
  bool gone = false;  // renamed away or deleted, being finished
};

// A stream's detection state as of `now` (bars' last advances on the wall clock too); the
// file-only fields are left to the caller.
StreamSnapshot SnapshotOf(const detect::StreamDetector& stream,
                          std::chrono::steady_clock::time_point now,
                          std::chrono::system_clock::time_point wall_now);

struct SourceSnapshot {
  std::string name;
  std::vector<std::string> tags;
  std::vector<std::string> paths;
  std::uint64_t lines = 0;
  std::uint64_t bytes = 0;
  std::vector<StreamSnapshot> files;
  std::vector<StreamSnapshot> streams;  // kmsg, the wrapped command's pipes
  std::optional<bool> kmsg_running;     // a kmsg source: whether /dev/kmsg is read
  std::set<std::string> parked_copies;
  // Files the globs match that cannot be followed, and why (the first kUnwatchedListed).
  static constexpr std::size_t kUnwatchedListed = 20;
  std::size_t unwatched_count = 0;
  std::vector<std::pair<std::string, std::string>> unwatched;
};

// The incident firings are joining now (within its settle time, not yet written).
struct SettlingIncidentSnapshot {
  std::string id;
  std::string kind;
  std::string summary;
  std::vector<std::string> rules;
};

// A written incident not yet resolved (ops/incident_lifecycle.h).
struct OpenIncidentSnapshot {
  std::string id;
  std::string kind;
  std::chrono::system_clock::time_point opened{};
};

// A rank of the running job (collect/rank_map.h), for `trainwatch status`.
struct RankSnapshot {
  std::string label;  // "rank 3", "pid 4242"
  int pid = 0;
  std::string comm;
  std::string rank_source;
  std::optional<int> local_rank;
  std::optional<int> world_size;
  std::optional<int> node_rank;
  std::vector<std::string> devices;  // "CUDA_VISIBLE_DEVICES=3"
  int launcher = 0;
};

// The ranks of `map` as status shows them.
std::vector<RankSnapshot> RankSnapshots(const collect::RankMap& map);

struct DaemonSnapshot {
  std::string version;
  int pid = 0;
  std::string config;
  std::string state_dir;
  std::int64_t uptime_seconds = 0;
  std::chrono::system_clock::time_point started{};
  std::chrono::system_clock::time_point taken{};  // when this snapshot was made (wall clock)
  std::vector<std::string> rules;                 // ids of the loaded rules
  // The time-judged rules' thresholds, as loaded: what a bar's pace and stall are held to.
  struct PaceRule {
    std::string id;
    double slower_by = 0;
    double for_seconds = 0;
    double baseline_seconds = 0;
  };
  struct StallRule {
    std::string id;
    double stall_after_seconds = 0;
    double startup_grace_seconds = 0;
    double factor = 0;  // 0: a fixed stall_after
    double min_seconds = 0;
  };
  std::vector<PaceRule> pace_rules;
  std::vector<StallRule> stall_rules;
  std::uint64_t incidents_written = 0;
  std::string incidents_file;
  std::string last_incident;
  std::map<std::string, std::uint64_t> firings_without_incident;  // warnings, cooldowns
  std::optional<SettlingIncidentSnapshot> settling_incident;
  std::vector<OpenIncidentSnapshot> open_incidents;  // oldest first
  // The shared directory (cluster.shared_dir), when one is configured.
  struct Shared {
    std::string dir;
    std::uint64_t published = 0;
    std::uint64_t pending = 0;
    std::string error;
    // Watching peers (cluster/peer_watcher.h).
    std::vector<std::string> watched_jobs;  // at the last poll
    std::uint64_t listings = 0;             // job directories listed
    std::uint64_t peer_records = 0;         // other nodes' incident records seen
    std::uint64_t peer_captures = 0;        // peer incidents captured for them
    std::string watch_error;
  };
  std::optional<Shared> shared;
  // The thread pool's work under way (core/env.h PoolWork): a worker busy for long is wedged.
  std::size_t workers_busy = 0;
  std::int64_t oldest_work_seconds = 0;
  // The process watch (watch/blocked_watch.h): how long its looks have not ended, once one
  // ran past its deadline; none while they answer or none is configured.
  std::optional<std::int64_t> process_watch_stalled_seconds;
  // How late the loop's one-second tick came, at worst, over the last minute (ops/loop_lag.h).
  double loop_lag_seconds = 0;
  // The Alertmanager output (alert/alert_output.h), when configured.
  struct Alertmanager {
    std::vector<std::string> urls;
    std::uint64_t open = 0;
    std::uint64_t ends_unsent = 0;
    std::uint64_t posts_ok = 0;
    std::uint64_t posts_failed = 0;
    std::uint64_t dropped = 0;
    std::string error;
  };
  std::optional<Alertmanager> alertmanager;
  DaemonCounters counters;
  std::vector<std::string> collectors;  // configured command collectors
  std::vector<std::string> hooks;       // configured on_incident hooks
  HookCounts hook_counts;
  std::vector<SourceSnapshot> sources;
  std::vector<RankSnapshot> ranks;         // the job's ranks now (status only; empty: none known)
  std::optional<detect::JobIdentity> job;  // the job the watched processes belong to (status)
};

// The loaded rules' ids, and the thresholds of the time-judged ones (pace, stall), into the
// snapshot.
void AddRules(const std::vector<rules::Rule>& rules, DaemonSnapshot& snapshot);

}  // namespace trainwatch::ops
