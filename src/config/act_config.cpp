#include "config/act_config.h"

#include <chrono>

#include "config/yaml_shapes.h"

namespace trainwatch::config {
namespace {

constexpr std::uint64_t kMaxBudget = 100;

void Budget(const YAML::Node& node, YamlReader& yaml, const char* key, std::uint32_t& out) {
  if (const YAML::Node value = node[key]) {
    if (auto number = WholeNumber(yaml, value, std::string("retry ") + key, 0, kMaxBudget)) {
      out = static_cast<std::uint32_t>(*number);
    }
  }
}

void Within(const YAML::Node& node, YamlReader& yaml, const std::string& what, Duration least,
            Duration most, const std::string& range, Duration& out) {
  if (!node) {
    return;
  }
  if (auto value = yaml.DurationField(node, what)) {
    if (*value < least || *value > most) {
      yaml.Fail(node, what + " must be between " + range);
    } else {
      out = *value;
    }
  }
}

}  // namespace

void ParseRetry(const YAML::Node& node, YamlReader& yaml, RetryConfig& out) {
  if (!IsMap(yaml, node, "retry",
             "{same_failure_budget, first_failure_budget, storm_attempts, storm_window}")) {
    return;
  }
  yaml.CheckKeys(node,
                 {"same_failure_budget", "first_failure_budget", "storm_attempts", "storm_window"},
                 "retry");
  Budget(node, yaml, "same_failure_budget", out.same_failure_budget);
  Budget(node, yaml, "first_failure_budget", out.first_failure_budget);
  Budget(node, yaml, "storm_attempts", out.storm_attempts);
  Within(node["storm_window"], yaml, "retry storm_window", std::chrono::minutes(1),
         std::chrono::hours(24 * 7), "1m and 7d", out.storm_window);
}

void ParseSlurm(const YAML::Node& node, YamlReader& yaml, SlurmConfig& out) {
  if (!IsMap(yaml, node, "slurm", "{drain, node_name, timeout}")) {
    return;
  }
  yaml.CheckKeys(node, {"drain", "node_name", "timeout"}, "slurm");
  if (const YAML::Node drain = node["drain"]) {
    if (auto value = yaml.BoolField(drain, "slurm drain")) {
      out.drain = *value;
    }
  }
  if (const YAML::Node name = node["node_name"]) {
    if (auto text = yaml.Scalar(name, "slurm node_name")) {
      if (!IsPlainName(*text)) {
        yaml.Fail(name, "slurm node_name: '" + *text +
                            "' is not a node name (letters, digits, '.', '_', '-')");
      } else {
        out.node_name = *text;
      }
    }
  }
  Within(node["timeout"], yaml, "slurm timeout", std::chrono::seconds(1), std::chrono::minutes(2),
         "1s and 2m", out.timeout);
}

}  // namespace trainwatch::config
