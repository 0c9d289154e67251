// The daemon's YAML config file, read into a DaemonConfig with every path expanded and made
// absolute, and every problem reported as a Diagnostic with file:line:col (all at once, like
// the rule loader). Reads nothing but the config file: the daemon creates state_dir and
// tolerates missing log directories. Pure function of the text and environment; any thread.
//
// The format. Every key is optional unless marked required, unknown keys are errors, and an
// empty file is valid (all defaults, no sources):
//
//   state_dir: ${STATE_DIRECTORY:-~/.local/state/trainwatch}   # the daemon's files (default)
//   rules: [/usr/share/trainwatch/rules, ./my-rules.yaml]  # rule files or directories of them;
//                                                          # omitted: the shipped packs
//   incident:
//     settle: 2s          # events this soon after the first join its incident (0s..10m)
//     cooldown: 5m        # a rule that opened or joined an incident opens no other this soon
//     follow_up: 30m      # a stall or silence of a job this soon after its crash, a death or
//                         # a peer's incident joins that one, no second capture (0s: off; <=24h)
//     context_lines: 20   # lines before an event kept with it (0..1000)
//   retry: {same_failure_budget: 3}   # the retry policy (config/act_config.h)
//   slurm: {drain: true}               # what is done in Slurm (config/act_config.h)
//   watch:
//     mode: auto              # auto (inotify, else polling) | inotify | poll
//     poll_interval: 1s       # how often polling stats files (at least 100ms)
//     rescan_interval: 30s    # how often globs are expanded again and files checked for growth
//                             # inotify missed (at least 100ms); directory changes rescan at once
//   wrap:
//     log_file: "${TRAINWATCH_LOGS:-~/trainwatch-logs}/wrap-{pid}.log"
//                             # where `trainwatch wrap` tees the child's output; "{pid}" is
//                             # kept for the caller to fill in. Omitted: it tees nowhere.
//     python_hook: true       # the command's Python processes load trainwatch's faulthandler
//                             # hook (PYTHONPATH): their stacks at a hang, without a debugger
//   metrics:
//     enabled: true                      # false: no textfile
//     path: <state_dir>/trainwatch.prom   # for node_exporter's textfile collector
//     interval: 5s                       # how often it is rewritten (at least 1s)
//   on_incident:              # commands run after each incident's bundle is written
//     - name: upload          # required, unique
//       argv: [sh, -c, 'aws s3 cp "$TRAINWATCH_BUNDLE" s3://bucket/']   # no shell unless named
//       timeout: 60s          # SIGTERM, then SIGKILL to its process group
//       when: [crash, hang, device, manual, peer]   # the incident kinds it runs for (the
//                             # default: all but warning)
//   cluster:
//     node_name: gpu-17       # default: $NODE_NAME, else the hostname
//     job_id: ${JOB_NAME}     # fixed; default: found in the job's processes' environment
//     job_id_variables: [MY_RUN_ID]   # looked up there first, before TRAINWATCH_JOB_ID,
//                             # TORCHELASTIC_RUN_ID, SLURM_JOB_ID, MASTER_ADDR:MASTER_PORT
//     shared_dir: /mnt/shared/trainwatch   # every node of the job mounts it; omitted: off
//     retention: 7d           # records there are removed after (at least 1h)
//     poll_interval: 2s       # how often the job's directory there is listed for other nodes'
//                             # incidents (200ms..1h)
//     peer_capture: true      # capture this node's ranks at once when another node of the job
//                             # opens an incident (a `peer` incident)
//   alertmanager: {urls: [http://alertmanager:9093]}   # config/alert_config.h
//   sources:
//     - name: train           # required, unique; letters, digits, '.', '_', '-'
//       tags: [train]         # required, non-empty: which rules apply (a rule's `tags`)
//       paths: ["${TRAINWATCH_LOGS:-~/trainwatch-logs}/**/*.log"]   # globs (source/glob.h)
//       start_at: end         # end | beginning: where to start in a file seen at startup
//     - name: kernel
//       tags: [kmsg]
//       kmsg: true            # the kernel log (/dev/kmsg) instead of paths
//     - name: processes
//       tags: [processes]
//       processes: true       # the jobs' processes: a line for each one stuck in the kernel
//       blocked_after: 30s    # in uninterruptible sleep, never woken, this long (4s..1h)
//
// A source has `paths` (a non-empty list), `kmsg: true` or `processes: true`, one of them. Paths
// may use ~,
// ${VAR} and ${VAR:-default} (config/path_expand.h); relative ones resolve against the
// config file's directory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/act_config.h"
#include "config/alert_config.h"
#include "config/capture_config.h"
#include "config/path_expand.h"
#include "core/quantity.h"
#include "core/source_location.h"

namespace trainwatch::config {

enum class StartAt { kEnd, kBeginning };
enum class WatchMode { kAuto, kInotify, kPoll };

// A `processes` source's threshold: a look every 2 s (watch/blocked_watch.h), so at least two.
inline constexpr Duration kMinBlockedAfter{4000};
inline constexpr Duration kMaxBlockedAfter{3600LL * 1000};

struct SourceConfig {
  std::string name;
  std::vector<std::string> tags;
  std::vector<std::string> paths;  // glob patterns, expanded and absolute; empty for kmsg
  bool kmsg = false;
  // The watched jobs' processes (watch/blocked_watch.h): a line for each thread stuck in the
  // kernel, `blocked_after` in uninterruptible sleep without being woken once.
  bool processes = false;
  Duration blocked_after{30000};
  StartAt start_at = StartAt::kEnd;
  SourceLocation where;  // the source's entry in the file
};

struct IncidentConfig {
  Duration settle{2000};
  Duration cooldown{300000};
  // A hang (stall, silence) of the same job this soon after a crash, device or peer incident
  // of it is that failure's follow-up, not an incident of its own: the job's collective
  // timeout, by default NCCL's and gloo's 30 minutes. 0: off.
  Duration follow_up{30LL * 60 * 1000};
  std::uint32_t context_lines = 20;
};

struct WatchConfig {
  WatchMode mode = WatchMode::kAuto;
  Duration poll_interval{1000};
  Duration rescan_interval{30000};
};

// The Prometheus textfile: written atomically every `interval`.
struct MetricsConfig {
  bool enabled = true;
  std::string path;  // expanded, absolute; default <state_dir>/trainwatch.prom
  Duration interval{5000};
};

// The job's place in a cluster (capture/job_identity.h).
struct ClusterConfig {
  std::string node_name;  // empty: the daemon's NODE_NAME, else the hostname
  std::string job_id;     // fixed (after ${VAR} expansion); empty: found in the job's environment
  std::vector<std::string> job_id_variables;   // looked up in the job's processes first
  std::string node_name_env;                   // the daemon's $NODE_NAME when loaded
  std::string shared_dir;                      // expanded, absolute; empty: no publishing
  Duration retention{7LL * 24 * 3600 * 1000};  // of the records there
  Duration poll_interval{2000};  // of the job directories, for the other nodes' incidents
  bool peer_capture = true;      // a peer incident when another node of the job opens one
};

struct DaemonConfig {
  std::string file;                     // the config file it came from (absolute)
  std::string state_dir;                // expanded, absolute
  std::vector<std::string> rule_paths;  // expanded, absolute; empty: the caller uses the shipped
                                        // packs
  IncidentConfig incident;
  RetryConfig retry;
  SlurmConfig slurm;
  WatchConfig watch;
  std::string wrap_log_file;  // expanded, absolute, "{pid}" kept; empty: wrap tees nowhere
  // wrap: load the Python hook into the command (its stacks on a signal, no debugger).
  bool wrap_python_hook = true;
  std::vector<SourceConfig> sources;
  CaptureConfig capture;  // bundles_dir and habana_logs filled with their defaults
  MetricsConfig metrics;
  std::vector<CommandConfig> on_incident;  // hooks, run after each incident's bundle
  ClusterConfig cluster;
  AlertmanagerConfig alertmanager;  // config/alert_config.h
};

// `config` is set exactly when `errors` is empty.
struct ConfigLoad {
  std::optional<DaemonConfig> config;
  std::vector<Diagnostic> errors;
};

// Reads and parses the file at `path`.
ConfigLoad LoadDaemonConfig(const std::string& path, const EnvLookup& env);

// Parses config text; `file_name` names it in diagnostics (as given) and its directory
// (made absolute against the working directory) anchors relative paths.
ConfigLoad ParseDaemonConfig(std::string_view text, const std::string& file_name,
                             const EnvLookup& env);

}  // namespace trainwatch::config
