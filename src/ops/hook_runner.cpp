#include "ops/hook_runner.h"

#include <spdlog/spdlog.h>

#include "capture/incident_filter.h"
#include "detect/incident_json.h"

namespace trainwatch::ops {

void HookRunner::Run(const detect::Incident& incident, const std::string& bundle,
                     const std::string& bundle_error, const std::string& incidents_file) {
  Batch batch;
  batch.incident_id = incident.id;
  std::string rules;
  for (const std::string& rule : incident.rules) {
    rules += (rules.empty() ? "" : ",") + rule;
  }
  const std::vector<std::string> env = {
      "TRAINWATCH_INCIDENT_ID=" + incident.id,
      "TRAINWATCH_INCIDENT_KIND=" + detect::IncidentKindName(incident),
      "TRAINWATCH_INCIDENT_RULE=" + (incident.rules.empty() ? "" : incident.rules.front()),
      "TRAINWATCH_INCIDENT_RULES=" + rules, "TRAINWATCH_INCIDENT_SUMMARY=" + incident.summary,
      "TRAINWATCH_INCIDENT_CAUSE=" + std::string(rules::CauseName(incident.verdict.verdict.cause)),
      "TRAINWATCH_INCIDENT_ACTION=" +
          std::string(rules::ActionName(incident.verdict.verdict.action)),
      "TRAINWATCH_INCIDENT_VERDICT=" + incident.verdict.why,
      "TRAINWATCH_INCIDENT_FINGERPRINT=" + incident.fingerprint,
      "TRAINWATCH_INCIDENT_RECURRENCE=" + std::to_string(incident.recurrence.count),
      // Which attempt of the job it ended, and why the retry policy chose the action (if it
      // did): a hook that cancels a job's retries or excludes the node says why.
      "TRAINWATCH_INCIDENT_ATTEMPT=" +
          (incident.attempt ? std::to_string(incident.attempt->number) : std::string()),
      "TRAINWATCH_INCIDENT_RETRY_POLICY=" + (incident.attempt ? incident.attempt->why : ""),
      "TRAINWATCH_JOB_ID=" + incident.job.id, "TRAINWATCH_NODE=" + incident.job.node,
      "TRAINWATCH_BUNDLE=" + bundle, "TRAINWATCH_BUNDLE_ERROR=" + bundle_error,
      "TRAINWATCH_INCIDENTS_FILE=" + incidents_file};
  for (const config::CommandConfig& hook : hooks_) {
    if (capture::WantedFor(hook.when, incident)) {
      batch.commands.push_back(hook);
      batch.commands.back().env = env;
    }
  }
  if (batch.commands.empty()) {
    return;
  }
  if (queue_.size() >= kMaxQueued) {
    ++counts_.dropped;
    spdlog::error("incident {}: on_incident hooks not run: {} incidents already wait for theirs",
                  incident.id, queue_.size());
    return;
  }
  queue_.push_back(std::move(batch));
  StartNext();
}

void HookRunner::StartNext() {
  if (running_) {
    return;
  }
  if (queue_.empty()) {
    if (on_idle_) {
      on_idle_();
    }
    return;
  }
  running_ = true;
  running_incident_ = queue_.front().incident_id;
  Batch batch = std::move(queue_.front());
  queue_.pop_front();
  for (const config::CommandConfig& hook : batch.commands) {
    ++counts_.runs[hook.name];
  }
  std::vector<config::CommandConfig> commands = batch.commands;
  runner_.Run(std::move(commands), [this, batch = std::move(batch)](
                                       const std::vector<collect::CollectorResult>& results) {
    OnDone(batch, results);
  });
}

void HookRunner::OnDone(const Batch& batch, const std::vector<collect::CollectorResult>& results) {
  for (const collect::CollectorResult& result : results) {
    if (result.status == collect::CollectorStatus::kOk) {
      spdlog::info("incident {}: on_incident hook {} done ({:.1f} s)", batch.incident_id,
                   result.name, result.duration_seconds);
      continue;
    }
    ++counts_.failures[result.name];
    spdlog::error("incident {}: on_incident hook {} {}: {}", batch.incident_id, result.name,
                  collect::CollectorStatusName(result.status), result.detail);
  }
  running_ = false;
  StartNext();
}

void HookRunner::Abort() {
  if (running_) {
    for (const std::string& name : runner_.Running()) {
      ++counts_.failures[name];
      spdlog::warn("incident {}: on_incident hook {} killed: the daemon is stopping",
                   running_incident_, name);
    }
  }
  for (const Batch& batch : queue_) {
    ++counts_.dropped;
    spdlog::warn("incident {}: on_incident hooks not run: the daemon is stopping",
                 batch.incident_id);
  }
  runner_.Abort();
  queue_.clear();
  running_ = false;
}

}  // namespace trainwatch::ops
