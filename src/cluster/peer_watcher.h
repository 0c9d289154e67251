// PeerWatcher: sees the incidents that the other nodes of this node's jobs publish on the
// shared directory (cluster/shared_publisher.h), so that this node can capture its own ranks
// at once instead of waiting for its watchdog. Network file systems give no inotify: every
// `interval` one worker on the thread pool lists <shared_dir>/jobs/<job>/ of each job running
// here — one readdir per job, and a read of each record not seen before — and the loop gets
// the new records. Never more than one worker: a shared directory that hangs costs that
// worker, not the loop, and the next poll waits for it.
//
// What it tolerates: a hostile or broken peer — a record file is read without following a link,
// never when it is a FIFO (or anything but a regular file), never past kMaxPeerRecordBytes, and
// only within the record schema (ParsePeerRecord); a job's directory is listed up to
// kMaxRecordsPerJob entries (the listing stops there, the rest never read into memory: said
// once in the log and counted in state().cut_listings) and kMaxReadsPerPoll reads per poll.
// A hung file system — each listing and read has a deadline, past which it is left behind on a
// thread counted against the watcher's own budget (core/deadline_call.h), not the users'; the
// job's further records are not read in that poll, and its directory is not listed again while
// the call left behind is still in the kernel. A record seen half-written (never,
// with the publisher's rename, but a foreign writer may) or unparsable is read again at the next
// polls, and given up after kUnreadableTries with one log line; a listing that errs keeps what was
// seen; attribute caching (NFS, sshfs) only delays a record by the cache's lifetime (the guide
// says which mount options keep it within the interval); clock skew, by judging freshness
// generously: records opened on their node's clock more than kFreshFor before this node's now are
// taken as seen (an old failure of a job that runs again under the same id), all others are new.
// This node's own records (its file suffix) and peer captures (never published) are skipped.
// Loop thread only, but for the worker.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cluster/peer_record.h"
#include "core/deadline_call.h"
#include "core/env.h"

namespace trainwatch::cluster {

struct WatcherState {
  std::vector<std::string> jobs;   // watched at the last poll
  std::uint64_t polls = 0;         // workers that ran
  std::uint64_t listings = 0;      // directory listings, one per job per poll
  std::uint64_t cut_listings = 0;  // listings stopped at kMaxRecordsPerJob entries (a flood)
  std::uint64_t reads = 0;         // record files read
  std::uint64_t records = 0;       // peers' new records handed on (fresh or not)
  std::uint64_t unread = 0;        // new records not read (WantsRecords said no)
  std::string error;               // why the last poll failed for some job; empty when it did not
};

class PeerWatcher {
 public:
  static constexpr std::chrono::minutes kFreshFor{10};
  static constexpr int kUnreadableTries = 3;
  static constexpr std::size_t kMaxJobs = 64;  // remembered jobs (seen records) at most
  // Per job: directory entries listed (and so records remembered) at most, and new records
  // read per poll at most (the rest wait for the next polls); a record file is read only up to
  // kMaxPeerRecordBytes.
  static constexpr std::size_t kMaxRecordsPerJob = 10000;
  static constexpr std::size_t kMaxReadsPerPoll = 256;
  // A listing or a record read that takes longer is left behind (a hung file system), counted
  // against this watcher's budget.
  static constexpr std::chrono::milliseconds kReadDeadline{5000};

  // Records new since the last poll, oldest first; `fresh` says whether each is recent
  // enough to act on (see above). Loop thread.
  struct Found {
    PeerRecord record;
    bool fresh = false;
  };
  using OnFound = std::function<void(const std::vector<Found>& found)>;
  // The job ids running on this node now (asked before each poll).
  using JobsNow = std::function<std::vector<std::string>()>;
  // Whether the records of that job are worth reading now. No: its new records are only
  // listed and taken as seen (this node has captured for the job's failure already: at 1,000
  // nodes, reading every node's record on every node would be a million reads).
  using WantsRecords = std::function<bool(const std::string& job)>;

  PeerWatcher(Env& env, JobsNow jobs_now, OnFound on_found, WantsRecords wants_records = {});
  ~PeerWatcher();
  PeerWatcher(const PeerWatcher&) = delete;
  PeerWatcher& operator=(const PeerWatcher&) = delete;

  // `shared_dir` empty: no polling. `node` names this node's own files (skipped).
  void Configure(std::string shared_dir, const std::string& node, Duration interval);
  // Polls now (when none runs), not waiting for the interval: tests, and a job just seen.
  void PollNow();
  const WatcherState& state() const { return state_; }
  // The daemon stops: no more polls (a worker under way finishes unheard).
  void Stop();

  // One worker's inputs (copies) and results.
  struct Poll;

 private:
  // What was seen of one job's directory.
  struct JobSeen {
    std::shared_ptr<const std::set<std::string>> names = std::make_shared<std::set<std::string>>();
    std::map<std::string, int> tries;  // unreadable names, and how often they were tried
    bool warned_over_cap = false;
    SteadyTime last_watched{};
    // The last call of its directory left behind at its deadline; expired once that returned.
    std::weak_ptr<const void> left_behind;
  };
  void OnPolled(const std::shared_ptr<Poll>& poll);
  void ForgetOldJobs();

  Env& env_;
  JobsNow jobs_now_;
  OnFound on_found_;
  WantsRecords wants_records_;
  std::string shared_dir_;
  std::string node_suffix_;
  Duration interval_{2000};
  bool running_ = false;
  bool stopped_ = false;
  std::unique_ptr<LoopTimer> timer_;
  std::map<std::string, JobSeen> seen_;  // by job id
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  DeadlineBudget budget_;  // the calls left behind: this watcher's, not the users'
  WatcherState state_;
};

}  // namespace trainwatch::cluster
