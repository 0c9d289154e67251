#include "capture/command_plan.h"

#include <algorithm>

#include "capture/incident_filter.h"

namespace trainwatch::capture {
namespace {

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    text.replace(at, from.size(), to);
    at += to.size();
  }
  return text;
}

bool Uses(const config::CommandConfig& command, const std::string& placeholder) {
  return std::any_of(command.argv.begin(), command.argv.end(), [&](const std::string& arg) {
    return arg.find(placeholder) != std::string::npos;
  });
}

}  // namespace

std::string SlurmJobOf(const detect::Incident& incident) {
  const std::string& id = incident.job.id;
  if (incident.job.id_from != "SLURM_JOB_ID" || id.empty() || id.size() > 32 || id.front() == '_' ||
      id.back() == '_' || std::count(id.begin(), id.end(), '_') > 1 ||
      !std::all_of(id.begin(), id.end(),
                   [](char c) { return (c >= '0' && c <= '9') || c == '_'; })) {
    return {};
  }
  return id;
}

std::vector<config::CommandConfig> CommandsFor(const std::vector<config::CommandConfig>& commands,
                                               const detect::Incident& incident,
                                               const std::vector<int>& pids,
                                               const std::string& container) {
  std::vector<config::CommandConfig> planned;
  for (const config::CommandConfig& command : commands) {
    if (!WantedFor(command.when, incident)) {
      continue;
    }
    if (Uses(command, "{container}") && container.empty()) {
      continue;  // see SkippedForNoContainer
    }
    const std::string slurm_job = SlurmJobOf(incident);
    if (Uses(command, "{slurm_job}") && slurm_job.empty()) {
      continue;  // see SkippedForNoContainer
    }
    const bool per_pid = Uses(command, "{pid}");
    for (int pid : per_pid ? pids : std::vector<int>{0}) {
      config::CommandConfig expanded = command;
      for (std::string& arg : expanded.argv) {
        arg = Replace(Replace(Replace(arg, "{pid}", std::to_string(pid)), "{container}", container),
                      "{slurm_job}", slurm_job);
      }
      expanded.as = Replace(expanded.as, "{pid}", std::to_string(pid));
      if (per_pid) {
        expanded.name.push_back('-');  // not "-" + ...: GCC 12 warns falsely (-Wrestrict)
        expanded.name += std::to_string(pid);
      }
      planned.push_back(std::move(expanded));
    }
  }
  return planned;
}

std::vector<collect::CollectorResult> SkippedForNoContainer(
    const std::vector<config::CommandConfig>& commands, const detect::Incident& incident,
    const std::string& container) {
  std::vector<collect::CollectorResult> skipped;
  const bool slurm_job = !SlurmJobOf(incident).empty();
  for (const config::CommandConfig& command : commands) {
    if (!WantedFor(command.when, incident)) {
      continue;
    }
    std::string why;
    if (Uses(command, "{container}") && container.empty()) {
      why = "no container known for this job";
    } else if (Uses(command, "{slurm_job}") && !slurm_job) {
      why = "no Slurm job known for this incident (no SLURM_JOB_ID in its job's processes)";
    }
    if (!why.empty()) {
      collect::CollectorResult result;
      result.name = command.name;
      result.status = collect::CollectorStatus::kSkipped;
      result.detail = std::move(why);
      skipped.push_back(std::move(result));
    }
  }
  return skipped;
}

}  // namespace trainwatch::capture
