#include "capture/builtin_collectors.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "capture/manifest.h"
#include "collect/exited_processes.h"
#include "collect/file_collectors.h"
#include "collect/process_collectors.h"
#include "collect/python_packages.h"
#include "collect/system_facts.h"
#include "core/stopwatch.h"
#include "detect/incident_json.h"

namespace trainwatch::capture {
namespace {

// The one user who runs the job's processes (their real uid); nullopt when they are several
// users' (one of them must not spend another's budget) or none is known.
std::optional<uid_t> JobUser(const std::vector<pid_t>& pids, const std::string& proc_root) {
  std::optional<uid_t> user;
  for (pid_t pid : pids) {
    const std::optional<uid_t> uid = ProcessRealUid(proc_root, pid);
    if (!uid) {
      continue;  // gone: nothing of it is read
    }
    if (user && *user != *uid) {
      return std::nullopt;
    }
    user = uid;
  }
  return user;
}

// "a, b, c", the first few of `items` and how many more.
template <typename T>
std::string Listed(const std::vector<T>& items) {
  constexpr std::size_t kNamed = 8;
  std::string text;
  for (std::size_t i = 0; i < items.size() && i < kNamed; ++i) {
    text += (i == 0 ? "" : ", ");
    if constexpr (std::is_same_v<T, std::string>) {
      text += items[i];
    } else {
      text += std::to_string(items[i]);
    }
  }
  if (items.size() > kNamed) {
    text += " and " + std::to_string(items.size() - kNamed) + " more";
  }
  return text;
}

// Whether the job ended before its capture: every one of its processes is gone, and what the
// daemon read of them while they ran is in "exited_processes" (`exited`).
bool JobGone(const std::vector<pid_t>& pids, const collect::CollectorResult& exited,
             const std::string& proc_root) {
  if (pids.empty() || exited.status != collect::CollectorStatus::kOk) {
    return false;
  }
  return std::none_of(pids.begin(), pids.end(), [&](pid_t pid) {
    struct stat info {};
    return ::lstat((proc_root + "/" + std::to_string(pid)).c_str(), &info) == 0;
  });
}

// A live collector that found none of a gone job's processes says so: it did not fail.
void ExitedIsNotFailed(collect::CollectorResult& result, bool job_gone,
                       const std::vector<pid_t>& pids) {
  if (result.status != collect::CollectorStatus::kFailed || !job_gone) {
    return;
  }
  result.status = collect::CollectorStatus::kSkipped;
  result.detail = "the job's processes (pids " + Listed(pids) +
                  ") exited before the capture; what was read of them while they ran is in "
                  "exited_processes";
}

}  // namespace

collect::CollectorResult CollectWithDeadline(const std::string& name, const std::string& what,
                                             std::function<collect::CollectorResult()> collect,
                                             std::chrono::milliseconds deadline,
                                             const DeadlineBudget& budget) {
  const Stopwatch stopwatch;
  std::string why;
  std::optional<collect::CollectorResult> result =
      CallWithDeadline<collect::CollectorResult>(std::move(collect), deadline, budget, why);
  if (result) {
    return std::move(*result);
  }
  collect::CollectorResult missed;
  missed.name = name;
  missed.status = why.starts_with(kNotTried) ? collect::CollectorStatus::kSkipped
                  : why.starts_with(kGaveUp) ? collect::CollectorStatus::kTimedOut
                                             : collect::CollectorStatus::kFailed;
  missed.detail = what + ": " + why;
  missed.duration_seconds = stopwatch.Seconds();
  return missed;
}

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
  collect::CollectorResult environment =
      collect::CollectEnvironment(pids, redactor, redactions, proc_root);
  collect::CollectorResult exited =
      collect::CollectExitedProcesses(request.remembered, redactor, redactions);
  collect::CollectorResult processes = collect::CollectProcesses(pids, proc_root);
  const bool job_gone = JobGone(pids, exited, proc_root);
  ExitedIsNotFailed(environment, job_gone, pids);
  ExitedIsNotFailed(processes, job_gone, pids);
  results.push_back(std::move(environment));
  results.push_back(std::move(exited));
  results.push_back(std::move(processes));
  // What the job's user can wedge (a venv, a log on a FUSE mount of theirs): each under a
  // deadline, charged to their budget. The work gets copies: it may outlive this call.
  const DeadlineBudget budget = UserDeadlineBudget(JobUser(pids, proc_root));
  const char* path_variable = std::getenv("PATH");
  results.push_back(CollectWithDeadline(
      "python_packages",
      pids.empty() ? "the Python packages of python3"
                   : "the Python packages of pids " + Listed(pids),
      [pids, path = std::string(path_variable != nullptr ? path_variable : ""), proc_root] {
        return collect::CollectPythonPackages(pids, path, proc_root);
      },
      kUserReadDeadline, budget));
  ExitedIsNotFailed(results.back(), job_gone, pids);
  results.push_back(collect::CollectSystemFacts(proc_root));
  std::vector<std::string> dirs = request.watched_dirs;
  dirs.push_back(bundles_dir);
  results.push_back(CollectWithDeadline(
      "disk_usage", "the disk usage of " + Listed(dirs),
      [dirs] { return collect::CollectDiskUsage(dirs); }, kUserReadDeadline, budget));
  std::vector<std::string> logs = request.log_files;
  logs.insert(logs.end(), request.extra_logs.begin(), request.extra_logs.end());
  results.push_back(CollectWithDeadline(
      "log_tails", "the tails of " + Listed(logs),
      [logs, tail_bytes = config.log_tail_bytes] {
        return collect::CollectLogTails(logs, tail_bytes);
      },
      kUserReadDeadline, budget));
  results.push_back(collect::CollectDirectory("habana_logs", config.habana_logs, "habana_logs",
                                              config.habana_logs_max_bytes));
  std::vector<std::string> paths = config.extra_paths;
  paths.insert(paths.end(), request.extra_paths.begin(), request.extra_paths.end());
  if (!paths.empty()) {
    results.push_back(CollectWithDeadline(
        "extra_paths", "the extra paths " + Listed(paths),
        [paths, max_bytes = config.extra_max_bytes] {
          return collect::CollectPaths(paths, max_bytes);
        },
        kUserReadDeadline, budget));
  }
  return results;
}

}  // namespace trainwatch::capture
