#include "cluster/shared_publisher.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

#include "cluster/peer_record.h"
#include "cluster/shared_listing.h"
#include "core/atomic_file.h"

namespace trainwatch::cluster {
namespace fs = std::filesystem;

// What one worker did; it owns its inputs (copies) and leaves its results here for the loop.
struct SharedPublisher::Attempt {
  std::string outbox_dir;
  std::string shared_dir;
  std::string node_suffix;
  std::chrono::hours retention{0};
  bool cleanup = false;
  std::uint64_t published = 0;
  std::uint64_t pending = 0;
  std::uint64_t removed = 0;                                // own records past retention
  std::vector<std::pair<std::string, std::string>> landed;  // outbox file, what was published
  std::string error;
};

namespace {

std::string ReadWhole(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Copies each outbox file to the shared directory and removes it once it landed; stops at
// the first failure (the shared directory is gone or full: the rest would fail the same way).
void CopyOutbox(SharedPublisher::Attempt& attempt) {
  std::error_code error;
  std::vector<fs::path> files;
  for (const fs::directory_entry& job : ListEntries(attempt.outbox_dir, error)) {
    std::error_code ignored;
    for (const fs::directory_entry& file : ListEntries(job.path(), ignored)) {
      if (IsPeerFileName(file.path().filename().string())) {
        files.push_back(file.path());
      }
    }
  }
  attempt.pending = files.size();
  const fs::path jobs = fs::path(attempt.shared_dir) / "jobs";
  if (!files.empty() && !fs::is_directory(jobs, error)) {
    // Never made here: at a mount point whose file system is not mounted, it would be made
    // on the local disk, and the records would land where no peer looks.
    attempt.error = jobs.string() +
                    " is not a directory: create it once on the shared file system (mkdir -p " +
                    jobs.string() + "); if it is there, that file system is not mounted here";
    return;
  }
  for (const fs::path& file : files) {
    const fs::path target_dir = jobs / file.parent_path().filename();
    fs::create_directory(target_dir, error);  // one level: jobs/ must be there
    if (error) {
      attempt.error = target_dir.string() + ": " + error.message();
      return;
    }
    const std::string text = ReadWhole(file);
    if (Status written = WriteFileAtomically((target_dir / file.filename()).string(), text, 0644);
        !written) {
      attempt.error = written.error().message;
      return;
    }
    // Removed by the loop, the outbox's only writer, and only if not replaced meanwhile (a
    // bundle's record for the same incident): then the next attempt publishes the newer one.
    attempt.landed.emplace_back(file.string(), text);
    ++attempt.published;
    --attempt.pending;
  }
}

// This node's records older than the retention, and job directories left empty.
void CleanUp(SharedPublisher::Attempt& attempt) {
  std::error_code error;
  const fs::path jobs = fs::path(attempt.shared_dir) / "jobs";
  const auto limit = fs::file_time_type::clock::now() - attempt.retention;
  for (const fs::directory_entry& job : ListEntries(jobs, error)) {
    std::error_code ignored;
    for (const fs::directory_entry& file : ListEntries(job.path(), ignored)) {
      // Any node's record or leftover temporary past the retention: a node that is gone for
      // good cleans up nothing of its own. Removing twice is harmless.
      const std::string name = file.path().filename().string();
      const bool record = IsPeerFileName(name) || name.ends_with(".json.tmp");
      std::error_code when;
      const auto written = file.last_write_time(when);
      if (record && !when && written < limit && fs::remove(file.path(), ignored)) {
        ++attempt.removed;
      }
    }
    fs::remove(job.path(), ignored);  // only when empty: rmdir
  }
}

}  // namespace

SharedPublisher::SharedPublisher(Env& env, std::string outbox_dir)
    : env_(env), outbox_dir_(std::move(outbox_dir)), retry_(env.NewTimer([this] { Flush(); })) {}

SharedPublisher::~SharedPublisher() { *alive_ = false; }

void SharedPublisher::Configure(std::string shared_dir, const std::string& node,
                                std::chrono::hours retention) {
  if (shared_dir != shared_dir_ && !shared_dir.empty()) {
    spdlog::info("incidents are published to {}/jobs for the job's other nodes", shared_dir);
  }
  shared_dir_ = std::move(shared_dir);
  node_suffix_ = OwnFileSuffix(node);
  retention_ = retention;
  backoff_ = kFirstRetry;
  Flush();
}

Status SharedPublisher::Publish(const std::string& job_dir, const std::string& file,
                                const std::string& text) {
  const fs::path dir = fs::path(outbox_dir_) / job_dir;
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) {
    return Error{dir.string() + ": " + error.message()};
  }
  if (Status written = WriteFileAtomically((dir / file).string(), text, 0600); !written) {
    return written;
  }
  if (running_) {
    again_ = true;
  } else {
    backoff_ = kFirstRetry;  // a new record is worth a prompt try even after failures
    Flush();
  }
  return Status::Ok();
}

void SharedPublisher::Flush() {
  if (shared_dir_.empty() || stopped_) {
    return;
  }
  if (running_) {
    again_ = true;
    return;
  }
  running_ = true;
  again_ = false;
  auto attempt = std::make_shared<Attempt>();
  attempt->outbox_dir = outbox_dir_;
  attempt->shared_dir = shared_dir_;
  attempt->node_suffix = node_suffix_;
  attempt->retention = retention_;
  const SteadyTime now = env_.SteadyNow();
  attempt->cleanup = !cleaned_once_ || now - last_cleanup_ >= std::chrono::hours(1);
  if (attempt->cleanup) {
    cleaned_once_ = true;
    last_cleanup_ = now;
  }
  env_.RunOnPool(
      [attempt] {
        try {
          CopyOutbox(*attempt);
          if (attempt->cleanup && attempt->error.empty()) {
            CleanUp(*attempt);
          }
        } catch (const std::exception& e) {  // allocation, or a library's surprise: not fatal
          attempt->error = e.what();
        }
      },
      [this, attempt, alive = alive_] {
        if (*alive) {
          OnAttempted(attempt);
        }
      });
}

void SharedPublisher::OnAttempted(const std::shared_ptr<Attempt>& attempt) {
  running_ = false;
  for (const auto& [file, text] : attempt->landed) {
    if (ReadWhole(file) == text) {
      std::error_code ignored;
      fs::remove(file, ignored);
    } else {
      again_ = true;  // replaced while it was sent: the newer one goes next
    }
  }
  state_.published += attempt->published;
  state_.pending = attempt->pending;
  if (attempt->removed > 0) {
    spdlog::info("shared directory: removed {} records older than {} h", attempt->removed,
                 retention_.count());
  }
  if (!attempt->error.empty()) {
    if (state_.error.empty()) {
      spdlog::error(
          "cannot publish to the shared directory {}: {}; {} records wait in {} and are "
          "retried (local detection goes on)",
          shared_dir_, attempt->error, attempt->pending, outbox_dir_);
    }
    state_.error = attempt->error;
    if (!retry_) {
      return;  // stopping
    }
    retry_->Start(std::chrono::duration_cast<std::chrono::milliseconds>(backoff_), {});
    backoff_ = std::min(backoff_ * 2, std::chrono::seconds(kMaxRetry));
    return;
  }
  if (!state_.error.empty()) {
    spdlog::info("the shared directory {} takes records again: {} published", shared_dir_,
                 attempt->published);
    state_.error.clear();
  }
  backoff_ = kFirstRetry;
  if (again_) {
    Flush();
  }
}

}  // namespace trainwatch::cluster
