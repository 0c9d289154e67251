#include "config/alert_config.h"

#include <algorithm>
#include <cctype>

#include "config/yaml_shapes.h"

namespace trainwatch::config {
namespace {

// The labels trainwatch sets itself: a config label of the same name would change what an
// alert means.
constexpr const char* kOwnLabels[] = {"alertname", "job_id", "node",        "rank",        "kind",
                                      "cause",     "action", "fingerprint", "retry_policy"};

std::optional<Duration> Within(YamlReader& yaml, const YAML::Node& node, const std::string& what,
                               Duration least, Duration most) {
  std::optional<Duration> value = yaml.DurationField(node, what);
  if (value && (*value < least || *value > most)) {
    yaml.Fail(node, what + ": must be between " + std::to_string(least.count() / 1000) + "s and " +
                        std::to_string(most.count() / 1000) + "s");
    return std::nullopt;
  }
  return value;
}

}  // namespace

bool IsLabelName(const std::string& name) {
  return !name.empty() &&
         (std::isalpha(static_cast<unsigned char>(name.front())) != 0 || name.front() == '_') &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
         });
}

void ParseAlertmanager(const YAML::Node& node, YamlReader& yaml, AlertmanagerConfig& out) {
  if (!IsMap(yaml, node, "alertmanager", "{urls, resend, timeout, labels}")) {
    return;
  }
  yaml.ForgetKeys();
  yaml.CheckKeys(node, {"urls", "resend", "timeout", "labels"}, "alertmanager");
  if (const YAML::Node urls = node["urls"]) {
    if (!urls.IsSequence()) {
      yaml.Fail(urls, "alertmanager urls: expected a list like [http://alertmanager:9093]");
    } else {
      for (const YAML::Node& url : urls) {
        std::optional<std::string> text = yaml.Scalar(url, "alertmanager urls");
        if (!text) {
          continue;
        }
        if (!text->starts_with("http://") && !text->starts_with("https://")) {
          yaml.Fail(url, "alertmanager urls: '" + *text +
                             "' is not an http:// or https:// URL (Alertmanager's address, "
                             "like http://alertmanager:9093)");
          continue;
        }
        while (text->ends_with('/')) {
          text->pop_back();
        }
        if (text->ends_with("/api/v2/alerts")) {
          text->resize(text->size() - std::string_view("/api/v2/alerts").size());
        }
        out.urls.push_back(*text);
      }
      if (out.urls.size() > AlertmanagerConfig::kMaxUrls) {
        yaml.Fail(urls, "alertmanager urls: at most 8");
        out.urls.resize(AlertmanagerConfig::kMaxUrls);
      }
    }
  }
  if (const YAML::Node resend = node["resend"]) {
    if (auto value = Within(yaml, resend, "alertmanager resend", std::chrono::seconds(10),
                            std::chrono::minutes(10))) {
      out.resend = *value;
    }
  }
  if (const YAML::Node timeout = node["timeout"]) {
    if (auto value = Within(yaml, timeout, "alertmanager timeout", std::chrono::seconds(1),
                            std::chrono::minutes(1))) {
      out.timeout = *value;
    }
  }
  if (const YAML::Node labels = node["labels"]) {
    if (!labels.IsMap()) {
      yaml.Fail(labels, "alertmanager labels: expected a mapping like {cluster: prod}");
      return;
    }
    for (const auto& entry : labels) {
      const std::string name = entry.first.IsScalar() ? entry.first.Scalar() : std::string();
      std::optional<std::string> value = yaml.Scalar(entry.second, "alertmanager labels " + name);
      if (!IsLabelName(name)) {
        yaml.Fail(entry.first, "alertmanager labels: '" + name + "' is not a label name");
      } else if (std::find(std::begin(kOwnLabels), std::end(kOwnLabels), name) !=
                 std::end(kOwnLabels)) {
        yaml.Fail(entry.first, "alertmanager labels: '" + name + "' is set by trainwatch");
      } else if (value) {
        out.labels.emplace_back(name, *value);
      }
    }
    std::sort(out.labels.begin(), out.labels.end());
  }
}

}  // namespace trainwatch::config
