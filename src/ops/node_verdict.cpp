#include "ops/node_verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "core/printable.h"
#include "core/time_format.h"
#include "ops/incident_log.h"
#include "ops/verdict_exit_code.h"

namespace trainwatch::ops {
namespace {

using json = nlohmann::ordered_json;

std::string TextOf(const json& object, const char* key) {
  const auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : std::string();
}

std::string When(detect::WallTime time) { return FormatUtc(time, TimeFormat::kIsoSeconds); }

void Add(NodeVerdict& verdict, Readiness level, std::string check, std::string text,
         std::string action = "", std::string incident = "") {
  verdict.reasons.push_back(
      {level, std::move(check), std::move(text), std::move(action), std::move(incident)});
}

// Worse first: CRITICAL, UNKNOWN, WARNING, PASS.
int Rank(Readiness level) {
  switch (level) {
    case Readiness::kCritical:
      return 3;
    case Readiness::kUnknown:
      return 2;
    case Readiness::kWarning:
      return 1;
    case Readiness::kPass:
      return 0;
  }
  return 0;
}

void JudgeIncidents(const NodeFacts& facts, NodeVerdict& verdict) {
  if (facts.incidents_error) {
    Add(verdict, Readiness::kUnknown, "incidents",
        "cannot read the node's incidents: " + *facts.incidents_error);
    verdict.checks.push_back({"incidents", "unreadable"});
    return;
  }
  std::size_t device_since_boot = 0;
  std::size_t excluded = 0;
  for (const NodeIncident& incident : facts.incidents) {
    if (incident.resolved_how == "ack") {
      continue;  // an operator dealt with it
    }
    const bool since_boot = !facts.booted || incident.opened >= *facts.booted;
    const std::string job = incident.job_id.empty() ? "" : " of job " + incident.job_id;
    if (incident.action == "exclude_node" && !incident.policy_why.empty() &&
        facts.now - incident.opened <= kExclusionFor) {
      // The policy's, from the job's attempts: a reboot does not answer it.
      ++excluded;
      Add(verdict, Readiness::kCritical, "policy",
          fmt::format("{}: {} (incident {}{}, {})",
                      incident.remedy_failed ? "the remedy did not work" : "excluded",
                      incident.policy_why, incident.id, job, When(incident.opened)),
          "exclude_node", incident.id);
      continue;
    }
    const bool failure =
        incident.kind == "device" || incident.kind == "crash" || incident.kind == "hang";
    if (IsDeviceCause(incident.cause) && failure && !since_boot &&
        facts.now - incident.opened <= kRebootedWarnFor) {
      // The remedy was applied; whether it worked, the next jobs tell.
      Add(verdict, Readiness::kWarning, "incidents",
          fmt::format("a {} failure before the last boot: {} (incident {}{}, {}); the reboot may "
                      "have fixed it, and if it comes back the node is excluded",
                      rules::CauseName(incident.cause), incident.summary, incident.id, job,
                      When(incident.opened)),
          "", incident.id);
      continue;
    }
    if (IsDeviceCause(incident.cause) && since_boot && failure) {
      ++device_since_boot;
      Add(verdict, Readiness::kCritical, "incidents",
          fmt::format("a {} failure since the last boot, not acknowledged: {} (incident {}{}, "
                      "{}{})",
                      rules::CauseName(incident.cause), incident.summary, incident.id, job,
                      When(incident.opened),
                      incident.resolved_how.empty()
                          ? ""
                          : "; the job went on (" + incident.resolved_how + ")"),
          incident.action.empty() ? "inspect" : incident.action, incident.id);
    }
  }
  verdict.checks.push_back(
      {"incidents",
       fmt::format("{} in {}; {} device failure(s) since boot, {} exclusion(s) by "
                   "the retry policy, unacknowledged",
                   facts.incidents.size(), facts.incidents_file, device_since_boot, excluded)});
}

void JudgeDevices(const NodeFacts& facts, NodeVerdict& verdict) {
  bool any = false;
  for (const DeviceCheck& device : facts.devices) {
    using Result = DeviceCheck::Result;
    switch (device.result) {
      case Result::kMissing:
        continue;  // not this node's kind of accelerator
      case Result::kAnswered:
        verdict.checks.push_back(
            {device.tool, fmt::format("answered in {:.1f} s", device.seconds)});
        break;
      case Result::kHung:
        Add(verdict, Readiness::kCritical, "device",
            fmt::format("{} did not answer within {:.0f} s: a wedged device or driver{}",
                        device.tool, device.seconds,
                        device.detail.empty() ? "" : " (" + device.detail + ")"),
            "reboot_node");
        verdict.checks.push_back({device.tool, "hung"});
        break;
      case Result::kFailed:
        Add(verdict, Readiness::kCritical, "device",
            fmt::format("{} failed: {}", device.tool, device.detail), "inspect");
        verdict.checks.push_back({device.tool, "failed"});
        break;
      case Result::kNotPermitted:
        Add(verdict, Readiness::kUnknown, "device",
            fmt::format("{} was refused: {}", device.tool, device.detail));
        verdict.checks.push_back({device.tool, "not permitted"});
        break;
    }
    any = true;
  }
  if (!any) {
    verdict.checks.push_back({"device", "no device tool installed (hl-smi, nvidia-smi, npu-smi)"});
  }
}

void JudgeRanks(const NodeFacts& facts, NodeVerdict& verdict) {
  if (facts.ranks_error) {
    Add(verdict, Readiness::kUnknown, "ranks", "cannot look at the ranks: " + *facts.ranks_error);
    verdict.checks.push_back({"ranks", "unreadable"});
    return;
  }
  for (const StuckRank& rank : facts.stuck) {
    Add(verdict, Readiness::kCritical, "ranks",
        fmt::format("{} (pid {}) is stuck in the kernel: uninterruptible sleep in {} at every "
                    "sample over {:.0f} s",
                    rank.label, rank.pid, rank.wchan.empty() ? "an unnamed function" : rank.wchan,
                    rank.seconds),
        "reboot_node");
  }
  verdict.checks.push_back({"ranks", fmt::format("{} rank process(es), {} stuck",
                                                 facts.ranks_checked, facts.stuck.size())});
}

}  // namespace

std::string_view ReadinessName(Readiness readiness) {
  switch (readiness) {
    case Readiness::kPass:
      return "PASS";
    case Readiness::kWarning:
      return "WARNING";
    case Readiness::kCritical:
      return "CRITICAL";
    case Readiness::kUnknown:
      return "UNKNOWN";
  }
  return "UNKNOWN";
}

int ExitCodeOf(Readiness readiness) {
  switch (readiness) {
    case Readiness::kPass:
      return 0;
    case Readiness::kWarning:
      return 1;
    case Readiness::kCritical:
      return 2;
    case Readiness::kUnknown:
      return 3;
  }
  return 3;
}

std::vector<NodeIncident> NodeIncidentsOf(std::string_view text) {
  std::vector<NodeIncident> incidents;
  std::map<std::string, std::size_t> by_id;
  ForEachRecord(text, [&](const json& record) {
    if (const std::string resolved = TextOf(record, "resolved"); !resolved.empty()) {
      if (auto found = by_id.find(resolved); found != by_id.end()) {
        incidents[found->second].resolved_how = TextOf(record, "how");
      }
      return;
    }
    if (!record.contains("firings")) {
      return;
    }
    NodeIncident incident;
    incident.id = TextOf(record, "id");
    incident.kind = TextOf(record, "kind");
    incident.summary = Printable(TextOf(record, "summary").substr(0, 300));
    incident.cause = rules::ParseCause(TextOf(record, "cause")).value_or(rules::Cause::kUnknown);
    incident.action = TextOf(record, "action");
    if (const auto job = record.find("job"); job != record.end() && job->is_object()) {
      incident.job_id = Printable(TextOf(*job, "id"));
    }
    if (const auto attempt = record.find("attempt");
        attempt != record.end() && attempt->is_object()) {
      incident.policy_why = Printable(TextOf(*attempt, "why"));
      const auto remedy = attempt->find("remedy_failed");
      incident.remedy_failed =
          remedy != attempt->end() && remedy->is_boolean() && remedy->get<bool>();
    }
    if (const auto opened = record.find("opened_ms");
        opened != record.end() && opened->is_number_integer()) {
      incident.opened = detect::WallTime{} + std::chrono::milliseconds(opened->get<std::int64_t>());
    }
    if (incident.id.empty()) {
      return;
    }
    by_id[incident.id] = incidents.size();
    incidents.push_back(std::move(incident));
  });
  if (incidents.size() > kMaxNodeIncidents) {
    incidents.erase(incidents.begin(),
                    incidents.end() - static_cast<std::ptrdiff_t>(kMaxNodeIncidents));
  }
  return incidents;
}

NodeVerdict JudgeNode(const NodeFacts& facts) {
  NodeVerdict verdict;
  verdict.node = facts.node;
  verdict.at = facts.now;
  JudgeIncidents(facts, verdict);
  JudgeDevices(facts, verdict);
  JudgeRanks(facts, verdict);
  std::stable_sort(
      verdict.reasons.begin(), verdict.reasons.end(),
      [](const NodeReason& a, const NodeReason& b) { return Rank(a.level) > Rank(b.level); });
  verdict.level = verdict.reasons.empty() ? Readiness::kPass : verdict.reasons.front().level;
  return verdict;
}

std::string NodeVerdictJson(const NodeVerdict& verdict) {
  json reasons = json::array();
  for (const NodeReason& reason : verdict.reasons) {
    reasons.push_back(
        {{"level", ReadinessName(reason.level)},
         {"check", reason.check},
         {"text", reason.text},
         {"action", reason.action.empty() ? json(nullptr) : json(reason.action)},
         {"incident", reason.incident.empty() ? json(nullptr) : json(reason.incident)}});
  }
  json checks = json::array();
  for (const NodeCheck& check : verdict.checks) {
    checks.push_back({{"check", check.check}, {"result", check.result}});
  }
  std::vector<std::string> actions;
  for (const NodeReason& reason : verdict.reasons) {
    if (!reason.action.empty() &&
        std::find(actions.begin(), actions.end(), reason.action) == actions.end()) {
      actions.push_back(reason.action);
    }
  }
  const json out = {{"schema", "trainwatch.node-verdict/1"},
                    {"node", verdict.node},
                    {"verdict", ReadinessName(verdict.level)},
                    {"exit_code", ExitCodeOf(verdict.level)},
                    {"at", FormatUtc(verdict.at)},
                    {"actions", actions},
                    {"reasons", std::move(reasons)},
                    {"checks", std::move(checks)}};
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string NodeVerdictText(const NodeVerdict& verdict) {
  std::string text;
  switch (verdict.level) {
    case Readiness::kPass:
      text = fmt::format("PASS: node {} is fit for a job\n", verdict.node);
      break;
    case Readiness::kWarning:
      text = fmt::format("WARNING: node {} may run a job; look at this\n", verdict.node);
      break;
    case Readiness::kCritical:
      text = fmt::format("CRITICAL: node {} is not fit for a job\n", verdict.node);
      break;
    case Readiness::kUnknown:
      text = fmt::format("UNKNOWN: node {} could not be judged\n", verdict.node);
      break;
  }
  for (const NodeReason& reason : verdict.reasons) {
    text += fmt::format("  {:<8} {}{}\n", ReadinessName(reason.level), reason.text,
                        reason.action.empty() ? "" : " -> " + reason.action);
  }
  for (const NodeCheck& check : verdict.checks) {
    text += fmt::format("  checked  {}: {}\n", check.check, check.result);
  }
  return text;
}

}  // namespace trainwatch::ops
