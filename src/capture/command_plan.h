// Which configured commands a capture runs, and with what arguments: those wanted for the
// incident's kind (`when:`), one per training process for a command naming `{pid}`, with
// `{container}` and `{slurm_job}` (the incident's Slurm job id) filled in; a command that needs
// one when none is known is left out and recorded as skipped. Pure functions; any thread.
#pragma once

#include <string>
#include <vector>

#include "collect/artifact.h"
#include "config/capture_config.h"
#include "detect/incident.h"

namespace trainwatch::capture {

std::vector<config::CommandConfig> CommandsFor(const std::vector<config::CommandConfig>& commands,
                                               const detect::Incident& incident,
                                               const std::vector<int>& pids,
                                               const std::string& container);

// The incident's Slurm job id (its job id read from SLURM_JOB_ID), when it is one: digits, or
// an array job's "1234_5". Empty otherwise: a value a job's environment set is never passed on
// unless it has that shape.
std::string SlurmJobOf(const detect::Incident& incident);

// The results that say so for the commands CommandsFor left out for want of a container or a
// Slurm job.
std::vector<collect::CollectorResult> SkippedForNoContainer(
    const std::vector<config::CommandConfig>& commands, const detect::Incident& incident,
    const std::string& container);

}  // namespace trainwatch::capture
