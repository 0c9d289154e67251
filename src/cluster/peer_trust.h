// Who may speak for a job across nodes. Any user can set a job id variable; only root (the
// publishing daemon) sets a uid. So a peer's record is acted on here — this node's ranks of
// that job paused and read — only when it names the uid its job runs as there, and that is
// the uid this node's processes of the job run as (none known here: nobody's ranks to pause,
// the capture takes only that uid's processes — unless it is root's, which would take
// everyone's: refused). Pure; any thread.
#pragma once

#include <sys/types.h>

#include <map>
#include <set>
#include <string>

#include "cluster/peer_record.h"

namespace trainwatch::cluster {

// The owners of this node's processes, by job id. A job with no owner known runs here by the
// operator's word (cluster.job_id) before any of its processes was seen: any uid speaks for it.
using JobOwners = std::map<std::string, std::set<uid_t>>;

// Why `record` must not be acted on here; empty when it may.
std::string UntrustedBecause(const PeerRecord& record, const JobOwners& here);

}  // namespace trainwatch::cluster
