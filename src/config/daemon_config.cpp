#include "config/daemon_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/source_config.h"
#include "config/yaml_reader.h"
#include "config/yaml_shapes.h"

namespace trainwatch::config {
namespace {

namespace fs = std::filesystem;

// A config file larger than this is something else passed by mistake.
constexpr std::uintmax_t kMaxConfigBytes = 1 << 20;
constexpr const char* kDefaultStateDir = "${STATE_DIRECTORY:-~/.local/state/trainwatch}";
constexpr std::uint32_t kMaxContextLines = 1000;
// A follow-up window longer than a day would join a new hang to a failure long fixed.
constexpr Duration kMaxFollowUp{24LL * 60 * 60 * 1000};
// A longer settle is almost surely a typo (1h for 1s): every bundle would wait that long, and
// the crashed process's state would be gone by then.
constexpr Duration kMaxSettle = std::chrono::minutes(10);
// Below this, polling and rescans cost more than they find.
constexpr Duration kMinInterval{100};

// Parses one file; a method that finds a problem records it and leaves the default in place,
// so parsing goes on and the operator sees all problems at once.
class DaemonConfigParser {
 public:
  DaemonConfigParser(const std::string& file_name, const EnvLookup& env,
                     std::vector<Diagnostic>& errors)
      : env_(env), yaml_(file_name, errors) {
    std::error_code ec;
    config_.file = fs::absolute(file_name, ec).lexically_normal().string();
    base_dir_ = fs::path(config_.file).parent_path();
  }

  DaemonConfig Parse(std::string_view text) {
    const YAML::Node root = yaml_.ParseDocument(text);
    // An empty file is a valid config: all defaults, no sources.
    if (root && !root.IsNull() && !root.IsMap()) {
      yaml_.Fail(root, "expected a mapping of settings (state_dir, rules, sources, ...)");
    }
    const bool map = root && root.IsMap();
    if (map) {
      yaml_.CheckKeys(root,
                      {"state_dir", "rules", "incident", "watch", "wrap", "sources", "capture",
                       "metrics", "on_incident", "cluster", "alertmanager", "retry", "slurm"},
                      "the config");
    }
    if (map && root["state_dir"]) {
      if (auto path = PathField(root["state_dir"], "state_dir")) {
        config_.state_dir = *path;
      }
    } else if (auto path = ExpandPath(kDefaultStateDir, env_)) {
      config_.state_dir = Resolve(*path);
    } else {
      yaml_.FailAtStart("no 'state_dir' given, and its default " + std::string(kDefaultStateDir) +
                        " cannot be expanded: " + path.error().message);
    }
    config_.capture.commands = DefaultCommands();
    config_.cluster.node_name_env = env_("NODE_NAME").value_or("");
    config_.slurm.slurmd_nodename_env = env_("SLURMD_NODENAME").value_or("");
    if (!map) {
      FillCaptureDefaults();
      return std::move(config_);
    }
    if (const YAML::Node node = root["rules"]) {
      ParseRules(node);
    }
    if (const YAML::Node node = root["incident"]) {
      ParseIncident(node);
    }
    if (const YAML::Node node = root["watch"]) {
      ParseWatch(node);
    }
    if (const YAML::Node node = root["wrap"]) {
      ParseWrap(node);
    }
    if (const YAML::Node node = root["sources"]) {
      ParseSources(
          node, yaml_,
          [this](const YAML::Node& path, const std::string& what) { return PathField(path, what); },
          config_.sources);
    }
    if (const YAML::Node node = root["capture"]) {
      ParseCaptureConfig(
          node, yaml_,
          [this](const YAML::Node& path, const std::string& what) { return PathField(path, what); },
          config_.capture);
    }
    if (const YAML::Node node = root["metrics"]) {
      ParseMetrics(node);
    }
    if (const YAML::Node node = root["on_incident"]) {
      ParseHooks(node, yaml_, config_.on_incident);
    }
    if (const YAML::Node node = root["cluster"]) {
      ParseCluster(node);
    }
    if (const YAML::Node node = root["alertmanager"]) {
      ParseAlertmanager(node, yaml_, config_.alertmanager);
    }
    if (const YAML::Node node = root["retry"]) {
      ParseRetry(node, yaml_, config_.retry);
    }
    if (const YAML::Node node = root["slurm"]) {
      ParseSlurm(node, yaml_, config_.slurm);
    }
    FillCaptureDefaults();
    return std::move(config_);
  }

 private:
  void FillCaptureDefaults() {
    if (config_.metrics.path.empty() && !config_.state_dir.empty()) {
      config_.metrics.path = config_.state_dir + "/trainwatch.prom";
    }
    if (!config_.state_dir.empty()) {
      config_.capture.cache_dir = config_.state_dir + "/cache";
    }
    if (config_.capture.bundles_dir.empty() && !config_.state_dir.empty()) {
      config_.capture.bundles_dir = config_.state_dir + "/bundles";
    }
    if (config_.capture.habana_logs.empty()) {
      if (auto path = ExpandPath("${HABANA_LOGS:-~/.habana_logs}", env_)) {
        config_.capture.habana_logs = Resolve(*path);
      }
    }
  }

  // A path relative to the config file's directory becomes absolute; nothing is looked up.
  std::string Resolve(const std::string& path) const {
    const fs::path p(path);
    return (p.is_absolute() ? p : base_dir_ / p).lexically_normal().string();
  }

  std::optional<std::string> PathField(const YAML::Node& node, const std::string& what) {
    auto text = yaml_.Scalar(node, what);
    if (!text) {
      return std::nullopt;
    }
    auto expanded = ExpandPath(*text, env_);
    if (!expanded) {
      yaml_.Fail(node, what + ": " + expanded.error().message);
      return std::nullopt;
    }
    if (expanded->empty()) {
      yaml_.Fail(node, what + " is empty" + (text->empty() ? "" : " once expanded"));
      return std::nullopt;
    }
    return Resolve(*expanded);
  }

  std::optional<Duration> DurationAtLeast(const YAML::Node& node, const std::string& what,
                                          Duration minimum) {
    auto value = yaml_.DurationField(node, what);
    if (value && *value < minimum) {
      yaml_.Fail(node, what + " must be at least " + std::to_string(minimum.count()) + "ms");
      return std::nullopt;
    }
    return value;
  }

  void ParseRules(const YAML::Node& node) {
    if (!IsNonEmptyList(yaml_, node, "rules",
                        "[/usr/share/trainwatch/rules] (leave it out for the shipped packs)")) {
      return;
    }
    for (const auto& item : node) {
      if (auto path = PathField(item, "a rules path")) {
        config_.rule_paths.push_back(*path);
      }
    }
  }

  void ParseIncident(const YAML::Node& node) {
    if (!IsMap(yaml_, node, "incident", "{settle, cooldown, follow_up, context_lines}")) {
      return;
    }
    yaml_.CheckKeys(node, {"settle", "cooldown", "follow_up", "context_lines"}, "incident");
    IncidentConfig& incident = config_.incident;
    if (const YAML::Node settle = node["settle"]) {
      if (auto value = yaml_.DurationField(settle, "incident settle")) {
        if (*value > kMaxSettle) {
          yaml_.Fail(settle, "incident settle must be at most 10m");
        } else {
          incident.settle = *value;
        }
      }
    }
    if (const YAML::Node cooldown = node["cooldown"]) {
      if (auto value = yaml_.DurationField(cooldown, "incident cooldown")) {
        incident.cooldown = *value;
      }
    }
    if (const YAML::Node follow_up = node["follow_up"]) {
      if (auto value = yaml_.DurationField(follow_up, "incident follow_up")) {
        if (*value > kMaxFollowUp) {
          yaml_.Fail(follow_up, "incident follow_up must be at most 24h");
        } else {
          incident.follow_up = *value;
        }
      }
    }
    if (const YAML::Node lines = node["context_lines"]) {
      if (auto value = WholeNumber(yaml_, lines, "incident context_lines", 0, kMaxContextLines)) {
        incident.context_lines = static_cast<std::uint32_t>(*value);
      }
    }
  }

  void ParseWatch(const YAML::Node& node) {
    if (!IsMap(yaml_, node, "watch", "{mode, poll_interval, rescan_interval}")) {
      return;
    }
    yaml_.CheckKeys(node, {"mode", "poll_interval", "rescan_interval"}, "watch");
    WatchConfig& watch = config_.watch;
    if (const YAML::Node mode = node["mode"]) {
      if (auto text = yaml_.Scalar(mode, "watch mode")) {
        if (*text == "auto") {
          watch.mode = WatchMode::kAuto;
        } else if (*text == "inotify") {
          watch.mode = WatchMode::kInotify;
        } else if (*text == "poll") {
          watch.mode = WatchMode::kPoll;
        } else {
          yaml_.Fail(mode, "unknown watch mode '" + *text + "' (expected auto, inotify or poll)");
        }
      }
    }
    if (const YAML::Node poll = node["poll_interval"]) {
      if (auto value = DurationAtLeast(poll, "watch poll_interval", kMinInterval)) {
        watch.poll_interval = *value;
      }
    }
    if (const YAML::Node rescan = node["rescan_interval"]) {
      if (auto value = DurationAtLeast(rescan, "watch rescan_interval", kMinInterval)) {
        watch.rescan_interval = *value;
      }
    }
  }

  void ParseMetrics(const YAML::Node& node) {
    if (!IsMap(yaml_, node, "metrics", "{enabled, path, interval}")) {
      return;
    }
    yaml_.CheckKeys(node, {"enabled", "path", "interval"}, "metrics");
    if (const YAML::Node enabled = node["enabled"]) {
      config_.metrics.enabled =
          yaml_.BoolField(enabled, "metrics enabled").value_or(config_.metrics.enabled);
    }
    if (const YAML::Node path = node["path"]) {
      if (auto resolved = PathField(path, "metrics path")) {
        config_.metrics.path = *resolved;
      }
    }
    if (const YAML::Node interval = node["interval"]) {
      if (auto value = DurationAtLeast(interval, "metrics interval", std::chrono::seconds(1))) {
        config_.metrics.interval = *value;
      }
    }
  }

  void ParseCluster(const YAML::Node& node) {
    if (!IsMap(yaml_, node, "cluster",
               "{node_name, job_id, job_id_variables, shared_dir, retention, poll_interval, "
               "peer_capture}")) {
      return;
    }
    yaml_.CheckKeys(node,
                    {"node_name", "job_id", "job_id_variables", "shared_dir", "retention",
                     "poll_interval", "peer_capture"},
                    "cluster");
    if (const YAML::Node poll = node["poll_interval"]) {
      if (auto value =
              DurationAtLeast(poll, "cluster poll_interval", std::chrono::milliseconds(200))) {
        if (*value > std::chrono::hours(1)) {
          yaml_.Fail(poll,
                     "cluster poll_interval: at most 1h (a peer's incident is seen this late)");
        } else {
          config_.cluster.poll_interval = *value;
        }
      }
    }
    if (const YAML::Node capture = node["peer_capture"]) {
      config_.cluster.peer_capture =
          yaml_.BoolField(capture, "cluster peer_capture").value_or(config_.cluster.peer_capture);
    }
    if (const YAML::Node dir = node["shared_dir"]) {
      if (auto path = PathField(dir, "cluster shared_dir")) {
        config_.cluster.shared_dir = *path;
      }
    }
    if (const YAML::Node retention = node["retention"]) {
      if (auto value = DurationAtLeast(retention, "cluster retention", std::chrono::hours(1))) {
        config_.cluster.retention = *value;
      }
    }
    for (const auto& [key, out] : {std::pair{"node_name", &config_.cluster.node_name},
                                   std::pair{"job_id", &config_.cluster.job_id}}) {
      const YAML::Node value = node[key];
      if (!value) {
        continue;
      }
      const std::string what = std::string("cluster ") + key;
      std::optional<std::string> text = yaml_.Scalar(value, what);
      if (!text) {
        continue;
      }
      // ${VAR} from the daemon's environment (a pod's downward API); no '~' here.
      Result<std::string> expanded = ExpandPath(*text, env_);
      if (!expanded) {
        yaml_.Fail(value, what + ": " + expanded.error().message);
      } else if (expanded->find_first_of("\n/") != std::string::npos) {
        yaml_.Fail(value, what +
                              ": must be one line without '/' (it names files on the "
                              "shared directory)");
      } else {
        *out = *expanded;
      }
    }
    if (const YAML::Node variables = node["job_id_variables"]) {
      if (!variables.IsSequence()) {
        yaml_.Fail(variables, "cluster job_id_variables: expected a list of variable names");
        return;
      }
      for (const YAML::Node& variable : variables) {
        std::optional<std::string> name = yaml_.Scalar(variable, "cluster job_id_variables");
        if (!name) {
          continue;
        }
        const bool valid = !name->empty() &&
                           (std::isalpha(static_cast<unsigned char>(name->front())) != 0 ||
                            name->front() == '_') &&
                           std::all_of(name->begin(), name->end(), [](char c) {
                             return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
                           });
        if (!valid) {
          yaml_.Fail(variable, "cluster job_id_variables: '" + *name +
                                   "' is not an environment variable name");
          continue;
        }
        config_.cluster.job_id_variables.push_back(*name);
      }
    }
  }

  void ParseWrap(const YAML::Node& node) {
    if (!IsMap(yaml_, node, "wrap", "{log_file, python_hook}")) {
      return;
    }
    yaml_.CheckKeys(node, {"log_file", "python_hook"}, "wrap");
    if (const YAML::Node file = node["log_file"]) {
      if (auto path = PathField(file, "wrap log_file")) {
        config_.wrap_log_file = *path;
      }
    }
    if (const YAML::Node hook = node["python_hook"]) {
      config_.wrap_python_hook =
          yaml_.BoolField(hook, "wrap python_hook").value_or(config_.wrap_python_hook);
    }
  }

  const EnvLookup& env_;
  YamlReader yaml_;
  DaemonConfig config_;
  fs::path base_dir_;
};

ConfigLoad FileProblem(const std::string& file, std::string message) {
  ConfigLoad load;
  load.errors.push_back({{file, 0, 0}, std::move(message)});
  return load;
}

}  // namespace

ConfigLoad ParseDaemonConfig(std::string_view text, const std::string& file_name,
                             const EnvLookup& env) {
  ConfigLoad load;
  DaemonConfigParser parser(file_name, env, load.errors);
  DaemonConfig config = parser.Parse(text);
  if (load.errors.empty()) {
    load.config = std::move(config);
  }
  return load;
}

ConfigLoad LoadDaemonConfig(const std::string& path, const EnvLookup& env) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) {
    return FileProblem(path, "cannot read config file: " + ec.message());
  }
  if (size > kMaxConfigBytes) {
    return FileProblem(path, "config file is " + std::to_string(size) +
                                 " bytes; config files are limited to 1 MiB");
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) {
    return FileProblem(path, "cannot read config file");
  }
  return ParseDaemonConfig(text.str(), path, env);
}

}  // namespace trainwatch::config
