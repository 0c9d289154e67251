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
    const bool per_pid = Uses(command, "{pid}");
    for (int pid : per_pid ? pids : std::vector<int>{0}) {
      config::CommandConfig expanded = command;
      for (std::string& arg : expanded.argv) {
        arg = Replace(Replace(arg, "{pid}", std::to_string(pid)), "{container}", container);
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
  if (!container.empty()) {
    return skipped;
  }
  for (const config::CommandConfig& command : commands) {
    if (Uses(command, "{container}") && WantedFor(command.when, incident)) {
      collect::CollectorResult result;
      result.name = command.name;
      result.status = collect::CollectorStatus::kSkipped;
      result.detail = "no container known for this job";
      skipped.push_back(std::move(result));
    }
  }
  return skipped;
}

}  // namespace trainwatch::capture
