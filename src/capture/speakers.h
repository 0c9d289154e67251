// Who an incident speaks for, and whose processes its capture may pause. A user can write any
// line into a log of theirs, with any job id in their environment: an incident raised from
// such a log must not make another user's ranks be paused, ptraced or bundled. The speakers
// are the owners of the logs its lines came from and of the processes writing them; where
// one of them is not root, the capture keeps only the processes of the speakers (a kernel
// line, a manual snapshot or root's own log speaks for everyone). Blocking stat calls; any
// thread.
#pragma once

#include <sys/types.h>

#include <set>
#include <string>
#include <vector>

#include "detect/incident.h"

namespace trainwatch::capture {

// Stands for a log whose owner is not known: no process is its user's.
inline constexpr uid_t kUnknownSpeaker = static_cast<uid_t>(-1);

// The uids that wrote the incident's lines; empty when none of them is a user's (the kernel,
// root, an operator).
std::set<uid_t> IncidentSpeakers(const detect::Incident& incident);

// Drops from `pids` the processes not owned by one of `speakers` (none when `speakers` is
// empty); says in `why` how many went, and whose.
void KeepSpeakersProcesses(const std::set<uid_t>& speakers, const std::string& proc_root,
                           std::vector<int>& pids, std::string& why);

}  // namespace trainwatch::capture
