// Which configured commands a capture runs, and with what arguments: those wanted for the
// incident's kind (`when:`), one per training process for a command naming `{pid}`, with
// `{container}` filled in; a command that needs a container when none is known is left out
// and recorded as skipped. Pure functions; any thread.
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

// The results that say so for the commands CommandsFor left out for want of a container.
std::vector<collect::CollectorResult> SkippedForNoContainer(
    const std::vector<config::CommandConfig>& commands, const detect::Incident& incident,
    const std::string& container);

}  // namespace trainwatch::capture
