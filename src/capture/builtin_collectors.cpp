#include "capture/builtin_collectors.h"

#include <sys/types.h>

#include <cstdlib>

#include "capture/manifest.h"
#include "collect/exited_processes.h"
#include "collect/file_collectors.h"
#include "collect/process_collectors.h"
#include "collect/python_packages.h"
#include "collect/system_facts.h"
#include "detect/incident_json.h"

namespace trainwatch::capture {

CollectorResults RunBuiltinCollectors(const CaptureRequest& request,
                                      const config::CaptureConfig& config,
                                      const std::string& bundles_dir,
                                      const collect::Redactor& redactor,
                                      collect::RedactionCounts& redactions,
                                      const std::string& proc_root) {
  CollectorResults results;
  collect::CollectorResult incident;
  incident.name = "incident";
  collect::AddText(incident, "incident/incident.json",
                   detect::IncidentJson(request.incident) + "\n");
  collect::AddText(incident, "incident/firing-lines.txt", FiringLines(request.incident));
  results.push_back(std::move(incident));
  const std::vector<pid_t> pids(request.pids.begin(), request.pids.end());
  results.push_back(collect::CollectEnvironment(pids, redactor, redactions, proc_root));
  results.push_back(collect::CollectExitedProcesses(request.remembered, redactor, redactions));
  results.push_back(collect::CollectProcesses(pids, proc_root));
  const char* path_variable = std::getenv("PATH");
  results.push_back(collect::CollectPythonPackages(
      pids, path_variable != nullptr ? path_variable : "", proc_root));
  results.push_back(collect::CollectSystemFacts(proc_root));
  std::vector<std::string> dirs = request.watched_dirs;
  dirs.push_back(bundles_dir);
  results.push_back(collect::CollectDiskUsage(dirs));
  std::vector<std::string> logs = request.log_files;
  logs.insert(logs.end(), request.extra_logs.begin(), request.extra_logs.end());
  results.push_back(collect::CollectLogTails(logs, config.log_tail_bytes));
  results.push_back(collect::CollectDirectory("habana_logs", config.habana_logs, "habana_logs",
                                              config.habana_logs_max_bytes));
  std::vector<std::string> paths = config.extra_paths;
  paths.insert(paths.end(), request.extra_paths.begin(), request.extra_paths.end());
  if (!paths.empty()) {
    results.push_back(collect::CollectPaths(paths, config.extra_max_bytes));
  }
  return results;
}

}  // namespace trainwatch::capture
