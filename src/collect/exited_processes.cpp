#include "collect/exited_processes.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>

#include "collect/process_collectors.h"

namespace trainwatch::collect {

CollectorResult CollectExitedProcesses(const std::vector<source::WriterProcess>& processes,
                                       const Redactor& redactor, RedactionCounts& counts) {
  CollectorResult result;
  result.name = "exited_processes";
  for (const source::WriterProcess& process : processes) {
    if (::kill(process.pid, 0) == 0 || errno == EPERM || process.cmdline.empty()) {
      continue;  // still there: the live collectors read it
    }
    const std::string folder = ProcessFolder(ProcessInfo{process.pid, process.comm, ""});
    std::string cmdline = process.cmdline;
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    redactor.RedactText(cmdline, counts);
    const std::string note = "# read while it was writing the log; it has exited since\n";
    result.artifacts.push_back({folder + "/cmdline.txt", note + cmdline + "\n"});
    result.artifacts.back().redact = false;
    result.artifacts.push_back(
        {folder + "/environ.txt", note + redactor.RedactEnvironment(process.environ, counts)});
    result.artifacts.back().redact = false;
  }
  for (const Artifact& artifact : result.artifacts) {
    result.bytes += artifact.content.size();
  }
  if (result.artifacts.empty()) {
    result.status = CollectorStatus::kSkipped;
    result.detail = "no process exited since it was seen writing";
  }
  return result;
}

}  // namespace trainwatch::collect
