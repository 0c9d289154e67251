#include "collect/exited_processes.h"

#include <signal.h>

#include <cerrno>
#include <set>

#include "collect/process_collectors.h"
#include "core/stopwatch.h"

namespace trainwatch::collect {

CollectorResult CollectExitedProcesses(const std::vector<source::WriterProcess>& processes,
                                       const Redactor& redactor, RedactionCounts& counts) {
  const Stopwatch stopwatch;
  CollectorResult result;
  result.name = "exited_processes";
  std::size_t exited = 0;
  std::set<int> seen;  // a writer of two streams is remembered twice
  for (const source::WriterProcess& process : processes) {
    if (!seen.insert(process.pid).second || ::kill(process.pid, 0) == 0 || errno == EPERM ||
        process.cmdline.empty()) {
      continue;  // still there: the live collectors read it
    }
    ++exited;
    const std::string folder = ProcessFolder(process.pid, process.comm);
    std::string cmdline = JoinCmdline(process.cmdline, /*quote=*/false);
    redactor.RedactText(cmdline, counts);
    const std::string note =
        "# read while it ran; it has exited since" +
        (process.exit_cause.empty() ? std::string() : " (" + process.exit_cause + ")") + "\n";
    // Redacted here (the environment by variable name): the writer must not redact again.
    AddText(result, folder + "/cmdline.txt", note + cmdline + "\n", /*redact=*/false);
    AddText(result, folder + "/environ.txt",
            note + redactor.RedactEnvironment(process.environ, counts), /*redact=*/false);
  }
  if (exited == 0) {
    AddDetail(result, "no process of the job exited since it was seen");
  }
  Finish(result, stopwatch, exited, exited);
  return result;
}

}  // namespace trainwatch::collect
