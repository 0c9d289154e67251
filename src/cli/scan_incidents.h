// How `scan` prints the incidents its firing lines make (incident/incident_replay.h): for
// people, a block per incident as `trainwatch incidents show` tells it, in short; for programs,
// the records incidents.jsonl would hold (an incident's, then its follow-ups'), after the
// events' lines. An incident record has "id" and "firings", a follow-up "follow_up_for", an
// event "file".
#pragma once

#include <ostream>

#include "cli/event_format.h"
#include "incident/incident_replay.h"

namespace trainwatch::cli {

void PrintReplayedIncidents(std::ostream& out, EventFormat format,
                            const incident::IncidentReplay::Outcome& outcome);

}  // namespace trainwatch::cli
