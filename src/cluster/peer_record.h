// What one node publishes of one incident on the cluster's shared directory, and what the
// others (and `trainwatch job`) read back: a small JSON file per incident per node,
// <shared_dir>/jobs/<job>/<incident id>@<node>.json, rewritten whole (atomically) when its
// bundle is done. Pure functions; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "detect/incident.h"
#include "diagnose/wait_straggler.h"

namespace trainwatch::cluster {

inline constexpr int kPeerRecordVersion = 1;
// A record is metadata: a file larger than this is refused unread (one of 200 MB once took
// every node's daemon to 5.4 GB), as are fields past their limits (ParsePeerRecord).
inline constexpr std::size_t kMaxPeerRecordBytes = 64 * 1024;

struct PeerSuspect {
  std::optional<int> rank;
  std::string label;
  std::string reason;
};

struct PeerRecord {
  std::string job_id;
  std::string node;
  std::optional<int> node_rank;
  std::vector<int> ranks;  // of the job, on that node
  std::optional<int> uid;  // the owner of the job's processes there (detect::JobIdentity)
  std::string incident_id;
  std::string kind;
  std::string summary;
  std::string cause;
  std::string action;
  std::string verdict;
  std::string fingerprint;
  std::int64_t opened_ms = 0;     // on that node's clock
  std::optional<int> first_rank;  // the rank whose line fired first, where its line said so
  // A rank there printed an error of its own (detect::RootError): that node failed, rather than
  // suffered another's failure.
  bool primary = false;
  std::string bundle;  // its path on that node, once written
  std::vector<PeerSuspect> suspects;
  // A slow incident: the rank the job's own straggler report names slowest.
  std::optional<int> straggler_rank;
  // Where the node's ranks waited during its capture, when it sampled them (a slow incident's,
  // or a peer capture for one): how the job's nodes are compared.
  std::optional<diagnose::NodeWaits> waiting;
  // Its attempt of the job as that node counts them (detect::AttemptPlace), the furthest step
  // reached, and why the retry policy decided its action, where it did.
  std::optional<int> attempt;
  std::string restart;  // the launcher's restart count ("TORCHELASTIC_RESTART_COUNT=2")
  std::optional<detect::JobStep> step;
  std::string retry_why;
  std::int64_t published_ms = 0;  // when it was (re)written, on that node's clock
};

// The record of a written incident (job identity set), without bundle and suspects yet.
PeerRecord PeerRecordOf(const detect::Incident& incident);
// The rank that printed its root error (detect::RootError): the firing's rank, else the one
// its launcher's prefix names ("[rank3]: ..."). None for a hang or only consequences.
std::optional<int> FirstFailingRank(const detect::Incident& incident);

// One line of JSON with "version".
std::string PeerRecordJson(const PeerRecord& record);
// Fails, saying why, on what is not a whole record of a known version, or one past the schema's
// limits: ids and names of at most 256 bytes, texts of at most 4 KiB, at most 64 suspects,
// ranks and node ranks in 0..2^20. Every text has its control characters made visible
// (core/printable.h): a record is shown on terminals and logged.
Result<PeerRecord> ParsePeerRecord(std::string_view text);
// Reads and parses the record file `path`, refusing anything but a regular file reached
// without a last link, of at most kMaxPeerRecordBytes: a FIFO planted in the shared directory
// never blocks the reader, a link never leads it elsewhere. Errors name the path.
Result<PeerRecord> ReadPeerRecordFile(const std::string& path);

// A job id as a directory name: what is not [A-Za-z0-9._-] becomes '_', at most 128 bytes,
// never "." or ".." ("10.0.0.1:29500" -> "10.0.0.1_29500").
std::string JobDirName(std::string_view job_id);
// "<incident id>@<node>.json", the node made safe the same way.
std::string PeerFileName(std::string_view incident_id, std::string_view node);
// "@<node>.json": how the names of a node's own records end.
std::string OwnFileSuffix(std::string_view node);
// Whether `name` is a published record (not a temporary being written).
bool IsPeerFileName(std::string_view name);

}  // namespace trainwatch::cluster
