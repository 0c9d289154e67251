// Which incidents a configured command (a collector or an on_incident hook) is for, from its
// `when:` (crash, hang, device, warning, manual). Pure function; any thread.
#pragma once

#include "config/capture_config.h"
#include "detect/incident.h"

namespace trainwatch::capture {

bool WantedFor(const config::When& when, const detect::Incident& incident);

}  // namespace trainwatch::capture
