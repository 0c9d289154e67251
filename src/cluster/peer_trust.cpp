#include "cluster/peer_trust.h"

#include <spdlog/fmt/fmt.h>

namespace trainwatch::cluster {

std::string UntrustedBecause(const PeerRecord& record, const JobOwners& here) {
  if (!record.uid) {
    return fmt::format(
        "its record names no uid for job {} (forged, or written by an older trainwatch): "
        "who speaks for the job is unknown, not acted on",
        record.job_id);
  }
  const auto owners = here.find(record.job_id);
  if (owners == here.end() && *record.uid == 0) {
    // Root's word speaks for every user's processes (capture/speakers.h): taken only for a job
    // whose processes here are root's too, never for one this node does not run, which anyone
    // able to write the shared directory could name.
    return fmt::format(
        "its record speaks as root for job {}, which has no process here: it would take every "
        "user's processes; not acted on",
        record.job_id);
  }
  if (owners != here.end() && !owners->second.empty() &&
      !owners->second.contains(static_cast<uid_t>(*record.uid))) {
    return fmt::format(
        "its record says job {} runs as uid {} on {}, but it runs as uid {} here: another "
        "user's claim to the job, not acted on",
        record.job_id, *record.uid, record.node, *owners->second.begin());
  }
  return {};
}

}  // namespace trainwatch::cluster
