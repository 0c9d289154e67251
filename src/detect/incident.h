// Incident: one failure as the daemon reports it — the events that fired for it (eight ranks
// printing the same traceback are one incident), with the lines before each. What
// incidents.jsonl records and what the capture stage turns into a bundle. Value type.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "detect/event.h"
#include "detect/incident_verdict.h"
#include "source/writers.h"

namespace trainwatch::detect {

using WallTime = std::chrono::system_clock::time_point;

// An event with where and when it fired.
struct Firing {
  Event event;
  std::string source;               // the config source's name
  std::string stream;               // the file path, "kmsg", or "wrap:stdout"/"wrap:stderr"
  std::string file_id;              // "dev:ino" of a tailed file, empty for other streams
  std::optional<uid_t> file_owner;  // that file's owner, read from the open file
  std::uint32_t head_bytes = 0;     // the file's fingerprint when it fired (see FileTail)
  std::uint64_t head_hash = 0;
  std::vector<std::string> context;            // up to context_lines lines before the event's line
  std::vector<source::WriterProcess> writers;  // the processes writing the stream, if known
  // Pids that wrote the stream and exited before this fired (a crashed process is often gone
  // before its traceback is judged complete): its job restarted only once others write it.
  std::vector<int> departed_writers;
  WallTime time{};  // when it fired: a traceback fires once its writer is quiet
  // When its first line was read: what orders the firings of several ranks (the first to
  // fail printed first, whichever rule decided first).
  WallTime first_line_time{};
  // The rank that wrote it: the launcher's prefix on its line ("[rank3]:"), else the rank in
  // its writers' environment (a log per rank); unknown for a stream several ranks write
  // without prefixes. Set by the incident pipeline (incident/firing_rank.h).
  std::optional<int> rank;
  // Where a re-read of the stream would detect this event again (its line, or the header
  // of the traceback it ends): the daemon persists no offset past it until the incident is
  // written. Unknown (0/0) for events of no line.
  std::uint64_t resume_offset = 0;
  std::uint64_t resume_line = 0;
};

// How often an incident's fingerprint was seen, this one included, across daemon restarts.
struct Recurrence {
  std::uint32_t count = 1;
  WallTime first{};     // the first time (this one's opening when it is the first)
  WallTime previous{};  // the one before; the epoch when none
};

// Which job an incident belongs to, and where it ran: what the daemons of one job's nodes
// share (capture/job_identity.h says where each part comes from).
struct JobIdentity {
  std::string id;       // empty: unknown
  std::string id_from;  // "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "config", ...
  std::string node;
  std::string node_from;  // "config", "NODE_NAME", "hostname"
  std::optional<int> node_rank;
  std::vector<int> ranks;  // of the job, on this node; sorted
  // The owner of the process the id was read from: only that user's processes elsewhere are
  // acted on for this job (a peer record of another uid is another user's claim).
  std::optional<uid_t> uid;
  // Which attempt of the job its processes are, as their launcher counts them:
  // "TORCHELASTIC_RESTART_COUNT=2", "SLURM_RESTART_COUNT=1"; empty when none says.
  std::string restart;
  std::string slurm_step;  // SLURM_STEP_ID, for a job id from SLURM_JOB_ID
};

// What a peer incident answers: another node's incident of the same job, read from the shared
// directory (cluster/peer_watcher.h). This node captured its own ranks' state because of it.
struct PeerLink {
  std::string job_id;
  std::string node;
  std::string incident_id;
  std::string kind;  // the peer's incident kind: "crash", "hang", ...
  std::string summary;
  std::string cause;  // the peer's verdict
  std::string action;
  std::optional<int> first_rank;  // the rank whose line fired first there, where known
  std::int64_t opened_ms = 0;     // on the peer's clock
  std::optional<int> uid;         // the job's owner there, checked to be this node's job's
};

// A step the job reached: its latest bar's label and count (detect/progress_tracker.h).
struct JobStep {
  std::string label;
  std::int64_t count = 0;
  bool operator==(const JobStep&) const = default;
};

// The incident's place among its job's attempts (incident/attempt_ledger.h) and what the retry
// policy made of them (incident/retry_policy.h), which its verdict's action says too.
struct AttemptPlace {
  std::uint32_t number = 1;     // 1: the first attempt of the job this node saw fail
  std::string marker;           // what tells it from the one before (AttemptMarker)
  std::optional<JobStep> step;  // the furthest step it reached
  std::string why;              // the policy's reason, in words
  // The earlier attempts that failed the same way (fingerprint), oldest first.
  std::vector<std::uint32_t> same_as;
  bool remedy_failed = false;  // a device failure came back after a reboot
  // This node printed the attempt's root error (a rank here failed first, or its device did),
  // and no other node of the job had told of a failure before it.
  bool failed_first = false;
  std::string boot_id;    // the node's boot when it failed (/proc/sys/kernel/random/boot_id)
  std::vector<int> pids;  // its ranks' processes here (or its writers'), sorted
};

struct Incident {
  std::string id;
  rules::RuleKind kind = rules::RuleKind::kCrash;
  std::string summary;
  std::string reason;              // a manual snapshot's reason; empty otherwise
  std::optional<PeerLink> peer;    // set for a peer incident (kind kWarning, like a manual one)
  std::vector<std::string> rules;  // distinct, in firing order
  std::vector<Firing> firings;     // at most kMaxFirings
  std::uint64_t more_firings = 0;  // events that joined beyond kMaxFirings
  IncidentVerdict verdict;         // its firings' cause and action (VerdictTally), when settled
  std::string fingerprint;         // detect/fingerprint.h, when written
  Recurrence recurrence;
  JobIdentity job;                      // when written
  std::optional<AttemptPlace> attempt;  // when written, for a failure of the job (not manual)
  WallTime opened{};
  WallTime closed{};
};

}  // namespace trainwatch::detect
