// The root of an incident of several ranks: which firing is the failure itself, not one of its
// consequences (a peer's "Connection closed by peer", a watchdog's timeout, the launcher's
// report) nor the hang it caused. The summary and the first failing rank come from it. Pure;
// any thread.
#pragma once

#include <optional>
#include <vector>

#include "detect/incident.h"

namespace trainwatch::detect {

// The firing that tells the failure best, in this order: a primary error (a crash or device
// firing of the rank's own) before a consequence, a consequence before a report, all before
// a hang or silence, any alarm before a warning; a device firing before a crash; among
// consequences and reports a line rule before a traceback (whose last line is often a
// launcher's re-raise around the failure). Then the first written: within one stream by its
// lines, across streams by when each one's first line was read (a traceback is judged only
// once its writer is quiet, so the rule that decided first is not always the first failure).
// Independent of the firings' order. Null when there are none.
const Firing* RootFiring(const std::vector<Firing>& firings);

// The root when it is an error some rank printed of its own (a primary crash or device
// firing): what "the first to fail" means. Null for a hang, a silence, or only consequences
// and reports.
const Firing* RootError(const std::vector<Firing>& firings);
// The rank the job's own straggler report names slowest, in a slow incident (a slow firing
// whose line names its rank: detect::Event::rank, the first such firing's); nullopt when none
// does, or the incident became another kind (a crash it joined says more).
std::optional<int> ReportedStraggler(const Incident& incident);
// The ranks printed errors (crash or device firings), every one a consequence of another's
// failure or a report of it, and none of their own: the failure is elsewhere.
bool OnlyConsequences(const std::vector<Firing>& firings);

// A traceback whose exception line is a consequence's or a report's (a gloo "Connection
// closed by peer", the launcher's ChildFailedError) plays that role too: marks it so.
void MarkConsequentTracebacks(std::vector<Firing>& firings);

}  // namespace trainwatch::detect
