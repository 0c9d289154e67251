#include "cluster/peer_watcher.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <optional>
#include <system_error>

#include "cluster/shared_listing.h"
#include "core/deadline_call.h"
#include "core/printable.h"

namespace trainwatch::cluster {
namespace fs = std::filesystem;

// What one worker did for one job.
struct JobPoll {
  std::string job_id;
  std::shared_ptr<const std::set<std::string>> seen;  // the loop's, read only here
  bool read = true;                                   // read new records (else: list only)
  std::weak_ptr<const void> left_behind;  // the last call there left behind (as JobSeen's)
  std::vector<std::string> names;         // peers' records listed
  std::vector<std::pair<std::string, PeerRecord>> records;  // listed name, read and parsed
  std::vector<std::string> other_jobs;  // records of another job id (same dir name)
  bool over_cap = false;                // the listing stopped at kMaxRecordsPerJob entries
  std::vector<std::pair<std::string, std::string>> unreadable;  // name, why
  std::string error;
};

struct PeerWatcher::Poll {
  std::string shared_dir;
  std::string node_suffix;
  DeadlineBudget budget;
  std::vector<JobPoll> jobs;
  std::uint64_t reads = 0;
};

namespace {

// `work` under the watcher's deadline and budget. A call that does not return is kept in
// `job.left_behind` until its work ends: the work lets go of the token it holds then.
template <typename T>
std::optional<T> CallThere(JobPoll& job, const DeadlineBudget& budget, std::function<T()> work,
                           std::string& why) {
  auto token = std::make_shared<char>();
  std::weak_ptr<const void> watch = token;
  std::optional<T> result = CallWithDeadline<T>(
      [work = std::move(work), token = std::move(token)]() mutable {
        T value = work();
        token.reset();
        return value;
      },
      PeerWatcher::kReadDeadline, budget, why);
  if (!result) {
    job.left_behind = watch;  // already expired when the work never ran
  }
  return result;
}

void PollJob(const PeerWatcher::Poll& poll, JobPoll& job, std::uint64_t& reads) {
  const fs::path dir = fs::path(poll.shared_dir) / "jobs" / JobDirName(job.job_id);
  // A hung network file system holds a listing or a read in the kernel: each has a deadline,
  // past which it is left behind (core/deadline_call.h) and this worker goes on. Another call
  // there while it is still stuck would only join it, one more thread per poll.
  if (!job.left_behind.expired()) {
    job.error = dir.string() +
                ": an earlier listing or read there has not returned (a hung file system?); "
                "not listed again until it does";
    return;
  }
  std::string hung;
  std::optional<Listing> listing = CallThere<Listing>(
      job, poll.budget, [dir] { return ListEntries(dir, PeerWatcher::kMaxRecordsPerJob); }, hung);
  if (!listing) {
    job.error = dir.string() + ": " + hung;
    return;
  }
  if (listing->error == std::errc::no_such_file_or_directory) {
    return;  // no node of this job has published anything yet
  }
  if (listing->error) {
    job.error = dir.string() + ": " + listing->error.message();
    return;
  }
  job.over_cap = listing->cut;  // a flood: the rest is not even listed
  std::size_t read_now = 0;
  bool reading = true;  // until a read misses its deadline: the next one would hang as well
  for (const fs::directory_entry& entry : listing->entries) {
    std::string name = entry.path().filename().string();
    if (!IsPeerFileName(name) || name.ends_with(poll.node_suffix)) {
      continue;  // a temporary being written, or this node's own
    }
    job.names.push_back(name);
    if (job.seen->contains(name) || !job.read) {
      continue;
    }
    if (!reading || read_now == PeerWatcher::kMaxReadsPerPoll) {
      job.names.pop_back();  // read at the next polls
      continue;
    }
    ++read_now;
    ++reads;
    std::optional<Result<PeerRecord>> read = CallThere<Result<PeerRecord>>(
        job, poll.budget, [path = entry.path().string()] { return ReadPeerRecordFile(path); },
        hung);
    if (!read) {
      reading = false;
      if (hung.starts_with(kNotTried)) {
        job.names.pop_back();  // refused, not unreadable: read at the next polls
      } else {
        job.unreadable.emplace_back(name, hung);
      }
      continue;
    }
    Result<PeerRecord>& record = *read;
    if (!record) {
      job.unreadable.emplace_back(name, record.error().message);
    } else if (record->job_id != job.job_id) {
      job.other_jobs.push_back(name);  // two ids made the same directory name
    } else {
      job.records.emplace_back(std::move(name), std::move(*record));
    }
  }
}

}  // namespace

PeerWatcher::PeerWatcher(Env& env, JobsNow jobs_now, OnFound on_found, WantsRecords wants_records)
    : env_(env),
      jobs_now_(std::move(jobs_now)),
      on_found_(std::move(on_found)),
      wants_records_(std::move(wants_records)),
      timer_(env.NewTimer([this] { PollNow(); })) {}

PeerWatcher::~PeerWatcher() { *alive_ = false; }

void PeerWatcher::Configure(std::string shared_dir, const std::string& node, Duration interval) {
  if (shared_dir != shared_dir_ && !shared_dir.empty()) {
    spdlog::info("watching {}/jobs every {} ms for the incidents of this node's jobs' other nodes",
                 shared_dir, interval.count());
  }
  shared_dir_ = std::move(shared_dir);
  node_suffix_ = OwnFileSuffix(node);
  interval_ = interval;
  if (!timer_) {
    return;  // stopped
  }
  if (shared_dir_.empty()) {
    timer_->Stop();
    return;
  }
  timer_->Start(interval_, interval_);
}

void PeerWatcher::Stop() {
  stopped_ = true;
  timer_.reset();  // its handle closed: the loop can end
}

void PeerWatcher::PollNow() {
  if (shared_dir_.empty() || stopped_ || running_) {
    return;  // a worker under way (a slow shared directory): the next tick asks again
  }
  std::vector<std::string> jobs = jobs_now_ ? jobs_now_() : std::vector<std::string>{};
  std::sort(jobs.begin(), jobs.end());
  jobs.erase(std::unique(jobs.begin(), jobs.end()), jobs.end());
  state_.jobs = jobs;
  if (jobs.empty()) {
    return;  // no job known here: nothing to list
  }
  running_ = true;
  auto poll = std::make_shared<Poll>();
  poll->shared_dir = shared_dir_;
  poll->node_suffix = node_suffix_;
  poll->budget = budget_;
  const SteadyTime now = env_.SteadyNow();
  for (const std::string& job : jobs) {
    JobSeen& seen = seen_[job];
    seen.last_watched = now;
    JobPoll& job_poll = poll->jobs.emplace_back();
    job_poll.job_id = job;
    job_poll.seen = seen.names;
    job_poll.read = !wants_records_ || wants_records_(job);
    job_poll.left_behind = seen.left_behind;
  }
  ForgetOldJobs();
  env_.RunOnPool(
      [poll] {
        for (JobPoll& job : poll->jobs) {
          try {
            PollJob(*poll, job, poll->reads);
          } catch (const std::exception& e) {  // allocation, or a library's surprise: not fatal
            job.error = e.what();
          }
        }
      },
      [this, poll, alive = alive_] {
        if (*alive) {
          OnPolled(poll);
        }
      });
}

void PeerWatcher::OnPolled(const std::shared_ptr<Poll>& poll) {
  running_ = false;
  if (stopped_) {
    return;
  }
  ++state_.polls;
  state_.reads += poll->reads;
  const std::int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(env_.WallNow().time_since_epoch())
          .count();
  const std::int64_t fresh_after =
      now_ms - std::chrono::duration_cast<std::chrono::milliseconds>(kFreshFor).count();
  std::vector<Found> found;
  std::string error;
  for (JobPoll& job : poll->jobs) {
    JobSeen& seen = seen_[job.job_id];
    seen.left_behind = job.left_behind;
    if (!job.error.empty()) {
      error = job.error;
      continue;  // what was seen stays seen
    }
    ++state_.listings;
    state_.cut_listings += job.over_cap ? 1 : 0;
    if (job.over_cap && !seen.warned_over_cap) {
      spdlog::warn(
          "shared directory: {}/jobs/{} holds more than {} entries: the listing stops there "
          "(a flood, or a job that never ends); records past it are not seen",
          poll->shared_dir, JobDirName(job.job_id), kMaxRecordsPerJob);
    }
    seen.warned_over_cap = job.over_cap;
    // Only the names still listed stay seen: the set never outgrows the directory.
    auto names = std::make_shared<std::set<std::string>>();
    for (const std::string& name : job.names) {
      if (seen.names->contains(name)) {
        names->insert(name);
      } else if (!job.read) {
        names->insert(name);  // not wanted now: seen unread
        ++state_.unread;
      }
    }
    for (const std::string& name : job.other_jobs) {
      names->insert(name);
    }
    for (auto& [name, record] : job.records) {
      names->insert(name);
      seen.tries.erase(name);
      if (record.kind == "peer") {
        continue;  // never published by a trainwatch; a foreign writer's, ignored
      }
      const bool fresh = record.opened_ms >= fresh_after;
      found.push_back({std::move(record), fresh});
    }
    for (const auto& [name, why] : job.unreadable) {
      if (++seen.tries[name] >= kUnreadableTries) {
        spdlog::warn("shared directory: cannot read {}/jobs/{}/{} after {} tries: {}; ignored",
                     poll->shared_dir, JobDirName(job.job_id), Printable(name), kUnreadableTries,
                     Printable(why));
        seen.tries.erase(name);
        names->insert(name);
      }
    }
    std::erase_if(seen.tries, [&job](const auto& entry) {
      return std::find(job.names.begin(), job.names.end(), entry.first) == job.names.end();
    });
    seen.names = std::move(names);
  }
  if (!error.empty() && state_.error.empty()) {
    spdlog::error(
        "cannot list the shared directory: {}; peers' incidents are not seen until it answers "
        "(local detection goes on)",
        error);
  } else if (error.empty() && !state_.error.empty()) {
    spdlog::info("the shared directory {} answers again", poll->shared_dir);
  }
  state_.error = error;
  state_.records += found.size();
  if (found.empty()) {
    return;
  }
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.record.opened_ms < b.record.opened_ms; });
  on_found_(found);
}

void PeerWatcher::ForgetOldJobs() {
  while (seen_.size() > kMaxJobs) {
    auto oldest = std::min_element(seen_.begin(), seen_.end(), [](const auto& a, const auto& b) {
      return a.second.last_watched < b.second.last_watched;
    });
    seen_.erase(oldest);
  }
}

}  // namespace trainwatch::cluster
