// The `alertmanager` section of the daemon config: where incidents are posted as alerts
// (alert/alert_output.h). Value types; any thread.
//
//   alertmanager:
//     urls: [http://alertmanager:9093]   # each instance of an HA cluster gets every alert;
//                                         # omitted or empty: no alerts
//     resend: 1m          # open incidents are posted again this often (10s..10m)
//     timeout: 10s        # one POST at most (1s..1m)
//     labels: {cluster: prod}   # added to every alert (names [a-zA-Z_][a-zA-Z0-9_]*)
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <utility>
#include <vector>

#include "config/yaml_reader.h"
#include "core/quantity.h"

namespace trainwatch::config {

struct AlertmanagerConfig {
  static constexpr std::size_t kMaxUrls = 8;
  std::vector<std::string> urls;  // base URLs, no trailing '/'; alerts go to <url>/api/v2/alerts
  Duration resend{60000};
  Duration timeout{10000};
  std::vector<std::pair<std::string, std::string>> labels;  // sorted by name
};

// Reads `node` into `out`, recording each problem in `yaml`.
void ParseAlertmanager(const YAML::Node& node, YamlReader& yaml, AlertmanagerConfig& out);

// Whether `name` is a Prometheus label name.
bool IsLabelName(const std::string& name);

}  // namespace trainwatch::config
