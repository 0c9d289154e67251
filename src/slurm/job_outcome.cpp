#include "slurm/job_outcome.h"

#include <map>
#include <nlohmann/json.hpp>

#include "core/printable.h"
#include "ops/incident_log.h"
#include "ops/verdict_exit_code.h"

namespace trainwatch::slurm {
namespace {

using json = nlohmann::ordered_json;

std::string TextOf(const json& object, const char* key) {
  const auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : std::string();
}

}  // namespace

JobOutcome JobOutcomeOf(std::string_view incidents, const std::string& job_id) {
  std::map<std::string, JobOutcome> seen;  // the job's incidents, by id
  std::string latest;
  std::string blaming;
  ops::ForEachRecord(incidents, [&](const json& record) {
    if (const std::string id = TextOf(record, "bundle_for"); !id.empty()) {
      if (auto it = seen.find(id); it != seen.end()) {
        it->second.concluded = true;
        it->second.bundle = Printable(TextOf(record, "bundle"));
      }
      return;
    }
    if (const std::string id = TextOf(record, "scheduler_for"); !id.empty()) {
      if (auto it = seen.find(id); it != seen.end()) {
        const auto done = record.find("done");
        it->second.drained =
            (done != record.end() && done->is_boolean() && done->get<bool>() ? "drained: "
                                                                             : "not drained: ") +
            Printable(TextOf(record, "why"));
      }
      return;
    }
    const auto job = record.find("job");
    if (!record.contains("firings") || job == record.end() || !job->is_object() ||
        TextOf(*job, "id") != job_id) {
      return;
    }
    JobOutcome outcome;
    outcome.found = true;
    outcome.incident_id = TextOf(record, "id");
    outcome.kind = TextOf(record, "kind");
    outcome.cause = TextOf(record, "cause");
    outcome.action = TextOf(record, "action");
    outcome.summary = Printable(TextOf(record, "summary").substr(0, 300));
    if (outcome.kind == "manual" || outcome.kind == "warning" || outcome.kind == "slow") {
      return;  // no failure of the job
    }
    outcome.node_fault =
        outcome.kind != "peer" &&
        ops::BlamesTheNode({rules::ParseCause(outcome.cause).value_or(rules::Cause::kUnknown),
                            rules::ParseAction(outcome.action).value_or(rules::Action::kInspect)});
    latest = outcome.incident_id;
    if (outcome.node_fault) {
      blaming = outcome.incident_id;
    }
    seen[outcome.incident_id] = std::move(outcome);
  });
  const std::string& chosen = blaming.empty() ? latest : blaming;
  return chosen.empty() ? JobOutcome{} : seen[chosen];
}

}  // namespace trainwatch::slurm
