// Redaction where log text enters an incident: a firing's line, summary and context lines
// are redacted once, as the daemon takes the firing, so everything made from it downstream —
// the incident's summary and firings in incidents.jsonl and the manifest, the daemon's own log
// lines, the hooks' TRAINWATCH_INCIDENT_SUMMARY, `trainwatch status` — is clean. Any thread.
#pragma once

#include <string>

#include "collect/redactor.h"
#include "detect/incident.h"

namespace trainwatch::capture {

void RedactFiring(const collect::Redactor& redactor, detect::Firing& firing,
                  collect::RedactionCounts& counts);

}  // namespace trainwatch::capture
