// RankCapture::FindPythonHelper: what gdb may use for a rank's Python stacks, the image's
// copies included for a rank in a container (container_files.h). On the pool.
#include <utility>

#include "capture/container_files.h"
#include "capture/gdb_python_helper.h"
#include "capture/rank_capture.h"
#include "capture/rank_capture_job.h"
#include "core/deadline_call.h"
#include "core/proc_files.h"

namespace trainwatch::capture {

// What gdb may use for rank `pid`'s Python stacks (job's python_helpers, python_helper_why,
// in_container, exe_copies, debug_dirs, one entry each). The rank names these files, which may
// sit on a hung file system (a venv on NFS): each step has a deadline, charged to its user.
void RankCapture::FindPythonHelper(Job& job, pid_t pid) {
  const DeadlineBudget budget = UserDeadlineBudget(ProcessRealUid(job.proc_root, pid));
  const std::string exe = ProcPath(job.proc_root, pid, "exe");
  using Found = std::pair<std::string, std::string>;  // the helper, or why there is none
  std::string why;
  std::optional<Found> found = CallWithDeadline<Found>(
      [exe] {
        std::string none;
        std::string helper = TrustedPythonHelper(exe, none).value_or("");
        return Found(std::move(helper), std::move(none));
      },
      kRankFileDeadline, budget, why);
  const std::string root = ForeignRootOf(pid, job.proc_root);
  job.in_container.push_back(!root.empty());
  job.exe_copies.emplace_back();
  job.debug_dirs.emplace_back();
  if (!root.empty() && found && found->first.empty()) {
    // The image's own interpreter: copies of its executable and debug information for gdb
    // (container_files.h), and this host's helper for its version.
    if (job.gdb_index_dir.empty()) {
      found->second = "it runs in a container, and gdb's cache folder could not be made";
    } else {
      using Copied = std::pair<std::string, std::string>;  // the copies' paths, or the error
      std::optional<Copied> copied = CallWithDeadline<Copied>(
          [exe, root, dir = job.gdb_index_dir + "/container"] {
            Result<std::string> copy = CopyOfExecutable(exe, dir);
            if (!copy) {
              return Copied("", copy.error().message);
            }
            Result<std::string> id = BuildIdOf(*copy);
            Result<std::string> debug = id ? CopyOfDebugInfo(root, *id, dir) : id.error();
            return Copied(*copy, debug ? *debug : std::string());
          },
          kRankFileDeadline, budget, why);
      if (!copied || copied->first.empty()) {
        found->second = "it runs in a container and its executable could not be copied for gdb (" +
                        (copied ? copied->second : why) + ")";
      } else {
        job.exe_copies.back() = copied->first;
        job.debug_dirs.back() = copied->second;
        const ContainerInterpreter container{InterpreterNameOf(pid, job.proc_root), copied->second};
        found->first =
            TrustedPythonHelper(copied->first, found->second, {}, &container).value_or("");
      }
    }
  }
  job.python_helpers.push_back(found ? std::move(found->first) : std::string());
  job.python_helper_why.push_back(found ? std::move(found->second) : why);
}

}  // namespace trainwatch::capture
