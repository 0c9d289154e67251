// SharedPublisher: puts this node's incident records on the cluster's shared directory
// (NFS, Lustre, CephFS, a Kubernetes RWX volume) without ever blocking the loop or losing
// one. A record goes first into a local outbox, <state_dir>/outbox/<job>/<file> (written
// atomically on the loop: a local disk), then a worker on the thread pool copies the outbox to
// <shared_dir>/jobs/<job>/<file> — a temporary and a rename, so a peer never reads half of
// it — and removes what landed. <shared_dir>/jobs is never created here (the operator makes it
// once on the shared file system): at a mount point left unmounted it would be made on the
// local disk, where no peer looks. A shared directory that is slow or gone costs that one
// worker (one at a time, never more), not the daemon: what did not land stays in the outbox,
// retried with backoff (2 s doubling to 60 s), and across a restart (the outbox is read at
// start). The worker also removes records (any node's: one gone for good cleans up nothing)
// and leftover temporaries older than `retention`, and the job directories left empty. Loop thread
// only, but for the worker.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "core/env.h"
#include "core/result.h"

namespace trainwatch::cluster {

struct PublisherState {
  std::uint64_t published = 0;  // records that landed since the start
  std::uint64_t pending = 0;    // in the outbox after the last attempt
  std::string error;            // why the last attempt stopped; empty when it did not
};

class SharedPublisher {
 public:
  static constexpr std::chrono::seconds kFirstRetry{2};
  static constexpr std::chrono::seconds kMaxRetry{60};

  SharedPublisher(Env& env, std::string outbox_dir);
  ~SharedPublisher();
  SharedPublisher(const SharedPublisher&) = delete;
  SharedPublisher& operator=(const SharedPublisher&) = delete;

  // `shared_dir` empty: nothing is published (records queued before stay in the outbox).
  // `node` names this node's own files.
  void Configure(std::string shared_dir, const std::string& node, std::chrono::hours retention);
  // Queues `text` as jobs/<job_dir>/<file>; a record of the same name replaces the queued one.
  Status Publish(const std::string& job_dir, const std::string& file, const std::string& text);
  // Starts a worker now if none runs and something waits (at start: a restart's leftovers).
  void Flush();
  const PublisherState& state() const { return state_; }
  // The daemon stops: no more retries (a worker under way finishes; what it did not publish
  // stays in the outbox for the next start).
  void Stop() {
    retry_.reset();
    stopped_ = true;
  }

  // One worker's inputs (copies) and results.
  struct Attempt;

 private:
  void OnAttempted(const std::shared_ptr<Attempt>& attempt);

  Env& env_;
  std::string outbox_dir_;
  std::string shared_dir_;
  std::string node_suffix_;  // "@<node>.json"
  std::chrono::hours retention_{24 * 7};
  bool running_ = false;
  bool stopped_ = false;
  bool again_ = false;  // a record came while the worker ran
  std::chrono::seconds backoff_{kFirstRetry};
  SteadyTime last_cleanup_{};
  bool cleaned_once_ = false;
  std::unique_ptr<LoopTimer> retry_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  PublisherState state_;
};

}  // namespace trainwatch::cluster
