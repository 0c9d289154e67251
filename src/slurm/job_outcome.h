// What became of a Slurm job on this node, read from the daemon's incidents.jsonl: for the
// Epilog (`trainwatch slurm-epilog`), which runs as the job ends and must say, quickly and
// without a daemon to ask, whether the node is at fault. Pure functions; any thread.
#pragma once

#include <string>
#include <string_view>

namespace trainwatch::slurm {

struct JobOutcome {
  bool found = false;      // an incident of the job was recorded here
  bool concluded = false;  // and its bundle was written (or why none is)
  std::string incident_id;
  std::string kind;
  std::string cause;
  std::string action;
  std::string summary;
  std::string bundle;
  // The node is at fault by its verdict: exclude_node or reboot_node, not the job's own
  // failure, not another node's (the same test as the drain's, slurm/slurm_drain_sink.h).
  bool node_fault = false;
  std::string drained;  // what the daemon did in Slurm about it, where it says
};

// The job's outcome in `incidents` (incidents.jsonl text): its incident that blames the node if
// one does, else its latest failure. `job_id` is the Slurm job id as its processes had it.
JobOutcome JobOutcomeOf(std::string_view incidents, const std::string& job_id);

}  // namespace trainwatch::slurm
