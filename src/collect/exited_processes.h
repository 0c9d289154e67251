// "exited_processes": the command line and environment of training processes that exited
// after they were first seen writing a log (a crash's usual case), as read back then: the
// live collectors can no longer read them. Redacted here. Plain function; any thread.
#pragma once

#include <vector>

#include "collect/artifact.h"
#include "collect/redactor.h"
#include "source/writers.h"

namespace trainwatch::collect {

// Processes still alive, and those never read, are left to the live collectors; kSkipped
// when no process is left.
CollectorResult CollectExitedProcesses(const std::vector<source::WriterProcess>& processes,
                                       const Redactor& redactor, RedactionCounts& counts);

}  // namespace trainwatch::collect
