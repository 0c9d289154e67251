// The `capture` section of the daemon config: what a bundle holds (command collectors, log
// tails, $HABANA_LOGS, extra paths, redaction) and how many bundles are kept. Every command
// collector is data: the shipped config lists the defaults, and a config without `commands`
// gets the same list (DefaultCommands()). Value types; any thread.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/yaml_reader.h"
#include "core/quantity.h"

namespace trainwatch::config {

// Which incidents a command runs for.
struct When {
  bool crash = true;
  bool hang = true;
  bool device = true;
  bool manual = true;  // `trainwatch snapshot`
  bool warning = false;
  bool peer = true;      // another node of the job opened an incident (cluster.shared_dir)
  bool diverged = true;  // the training diverged (a loss that stays NaN)
  bool slow = true;      // the job runs slower than its own pace (no rank is stopped for it)

  bool operator==(const When&) const = default;
};

struct CommandConfig {
  std::string name;               // "hl-smi-q": the manifest's name for it
  std::vector<std::string> argv;  // no shell; "{pid}" runs once per training process
  Duration timeout{10000};
  std::uint64_t max_output_bytes = 4ull << 20;
  bool keep_tail = false;  // over the limit, keep the last bytes (dmesg) rather than the first
  When when;
  std::string as;  // the file in the bundle: "device/hl-smi-q.txt"; "{pid}" allowed
  // NAME=value pairs added to the child's environment (an on_incident hook's incident facts);
  // the rest of the environment is the daemon's.
  std::vector<std::string> env;
};

struct CaptureConfig {
  bool enabled = true;
  std::string bundles_dir;  // default: <state_dir>/bundles
  std::size_t max_count = 20;
  std::uint64_t max_bytes = 2ull << 30;
  std::uint64_t min_free_bytes = 0;
  double min_free_percent = 5;
  std::uint64_t log_tail_bytes = 8ull << 20;  // of each watched file
  std::string habana_logs;                    // default: ${HABANA_LOGS:-~/.habana_logs}
  std::uint64_t habana_logs_max_bytes = 100ull << 20;
  std::vector<std::string> extra_paths;         // model config files, checkpoint directories
  std::uint64_t extra_max_bytes = 16ull << 20;  // per file
  // Command lines (RE2) of the training processes whose environment, command line and stacks
  // are captured, besides the writers of the watched logs and the wrapped command.
  std::string process_pattern;
  // At every capture, the rank map, each rank's Python and native stacks (py-spy, gdb,
  // eu-stack: each pauses a rank for its run) and the suspects (capture/rank_capture.h).
  bool stacks = true;
  // The ranks one capture takes stacks of at most (8-16 accelerators per node is common); the
  // rest are listed as skipped. Each rank costs its tools' time: 200 once took 14 s and made
  // another job's capture wait.
  std::size_t max_ranks = 16;
  // Where gdb keeps its symbol index between captures (<state_dir>/cache; not a config key):
  // a rank is paused half as long once the job's libraries are indexed.
  std::string cache_dir;
  std::vector<std::string> redact_names;
  std::vector<std::string> redact_patterns;
  std::vector<CommandConfig> commands;
  int compression_level = 3;
  // On SIGTERM, how long a capture under way may take to finish before it is abandoned (and
  // recorded as interrupted): within the unit's 30 s stop timeout.
  Duration stop_grace{20000};
};

// The command collectors a config without `capture.commands` gets.
std::vector<CommandConfig> DefaultCommands();
// Their names, in order: the metrics' and status's label for each.
std::vector<std::string> CommandNames(const std::vector<CommandConfig>& commands);

// Parses `node` (the `on_incident` list) into `out`: commands with name, argv, timeout and
// when (no `as`, `keep` or `max_output_bytes`: a hook's output goes to the log, not a
// bundle). Hook timeouts default to 60 s.
void ParseHooks(const YAML::Node& node, YamlReader& yaml, std::vector<CommandConfig>& out);

// Parses `node` (the `capture` mapping) into `out`, recording problems in `yaml`.
// `path` expands and resolves a path field (as the rest of the config does), nullopt when
// it failed (recorded).
void ParseCaptureConfig(
    const YAML::Node& node, YamlReader& yaml,
    const std::function<std::optional<std::string>(const YAML::Node&, const std::string&)>& path,
    CaptureConfig& out);

}  // namespace trainwatch::config
