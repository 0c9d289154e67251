#include "alert/alert.h"

#include <nlohmann/json.hpp>

#include "cluster/peer_record.h"
#include "core/time_format.h"
#include "detect/incident_json.h"
#include "detect/incident_root.h"

namespace trainwatch::alert {
namespace {

using json = nlohmann::json;

std::string Rfc3339(std::int64_t ms) {
  return FormatUtc(std::chrono::system_clock::time_point(std::chrono::milliseconds(ms)),
                   TimeFormat::kIsoMillis);
}

std::map<std::string, std::string> StringMap(const json& object) {
  std::map<std::string, std::string> out;
  if (object.is_object()) {
    for (const auto& [key, value] : object.items()) {
      if (value.is_string()) {
        out[key] = value.get<std::string>();
      }
    }
  }
  return out;
}

}  // namespace

Alert AlertOf(const detect::Incident& incident, const config::AlertmanagerConfig& config) {
  Alert alert;
  alert.incident_id = incident.id;
  for (const auto& [name, value] : config.labels) {
    alert.labels[name] = value;
  }
  alert.labels["alertname"] = kAlertName;
  // An empty value is no label at all to Alertmanager: left out rather than sent empty.
  const auto set = [&alert](const std::string& name, const std::string& value) {
    if (!value.empty()) {
      alert.labels[name] = value;
    }
  };
  set("job_id", incident.job.id);
  set("node", incident.job.node);
  const std::optional<int> rank = cluster::FirstFailingRank(incident);
  // A slow job's straggler, as its own report names it, is the rank to look at.
  const std::optional<int> straggler = detect::ReportedStraggler(incident);
  set("rank",
      rank ? std::to_string(*rank) : (straggler ? std::to_string(*straggler) : std::string()));
  set("kind", detect::IncidentKindName(incident));
  // A job that failed or stopped wakes someone; one that runs on slower, or a capture for
  // another node's failure, is for the morning.
  if (!alert.labels.contains("severity")) {  // a site's own routing label wins
    set("severity", incident.kind == rules::RuleKind::kSlow ||
                            incident.kind == rules::RuleKind::kWarning || incident.peer ||
                            !incident.reason.empty()
                        ? "warning"
                        : "critical");
  }
  set("cause", std::string(rules::CauseName(incident.verdict.verdict.cause)));
  set("action", std::string(rules::ActionName(incident.verdict.verdict.action)));
  set("fingerprint", incident.fingerprint);
  // What the retry policy decided from the job's attempts, for a route that acts on it (a
  // scheduler's webhook cancelling the job's retries, draining the node).
  if (incident.attempt && !incident.attempt->why.empty()) {
    set("retry_policy", std::string(rules::ActionName(incident.verdict.verdict.action)));
    alert.annotations["retry_policy"] = incident.attempt->why;
  }
  if (incident.attempt) {
    alert.annotations["attempt"] = std::to_string(incident.attempt->number);
  }
  alert.annotations["summary"] = incident.summary;
  alert.annotations["description"] = incident.verdict.why;
  alert.annotations["incident"] = incident.id;
  if (rank) {
    alert.annotations["first_failing"] =
        "node " + incident.job.node + " rank " + std::to_string(*rank);
  } else if (straggler) {
    alert.annotations["straggler"] =
        "rank " + std::to_string(*straggler) + ", the slowest by the job's own report";
  }
  alert.starts_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(incident.opened.time_since_epoch())
          .count();
  return alert;
}

std::string PostBody(const std::vector<const Alert*>& alerts, std::int64_t now_ms,
                     std::int64_t valid_for_ms) {
  json body = json::array();
  for (const Alert* alert : alerts) {
    body.push_back(
        {{"labels", alert->labels},
         {"annotations", alert->annotations},
         {"startsAt", Rfc3339(alert->starts_ms)},
         {"endsAt", Rfc3339(alert->ends_ms != 0 ? alert->ends_ms : now_ms + valid_for_ms)}});
  }
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string StoreJson(const std::map<std::string, Alert>& alerts) {
  json list = json::array();
  for (const auto& [id, alert] : alerts) {
    list.push_back({{"incident", alert.incident_id},
                    {"labels", alert.labels},
                    {"annotations", alert.annotations},
                    {"starts_ms", alert.starts_ms},
                    {"ends_ms", alert.ends_ms},
                    {"end_unsent", alert.end_unsent}});
  }
  return json{{"version", 1}, {"alerts", std::move(list)}}.dump(1, ' ', false,
                                                                json::error_handler_t::replace) +
         "\n";
}

Result<std::map<std::string, Alert>> ParseStore(std::string_view text) {
  const json store = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!store.is_object()) {
    return Error{"not JSON"};
  }
  const auto version = store.find("version");
  if (version == store.end() || !version->is_number_integer() || version->get<int>() != 1) {
    return Error{"not version 1"};
  }
  std::map<std::string, Alert> alerts;
  const auto list = store.find("alerts");
  if (list == store.end() || !list->is_array()) {
    return alerts;
  }
  for (const json& entry : *list) {
    if (!entry.is_object() || !entry.contains("incident") || !entry["incident"].is_string()) {
      continue;
    }
    Alert alert;
    alert.incident_id = entry["incident"].get<std::string>();
    alert.labels = StringMap(entry.value("labels", json::object()));
    alert.annotations = StringMap(entry.value("annotations", json::object()));
    const auto number = [&entry](const char* key) -> std::int64_t {
      const auto it = entry.find(key);
      return it != entry.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
    };
    alert.starts_ms = number("starts_ms");
    alert.ends_ms = number("ends_ms");
    alert.end_unsent = static_cast<std::uint32_t>(number("end_unsent"));
    if (alert.labels.contains("alertname")) {
      alerts[alert.incident_id] = std::move(alert);
    }
  }
  return alerts;
}

}  // namespace trainwatch::alert
