// SharedDirLink: this node's link to the other nodes of its jobs through the shared directory
// (cluster.shared_dir) — as a sink, it publishes each failure's record, and again with its
// bundle (cluster/shared_publisher.h); as an input, it reads the other nodes' records
// (cluster/peer_watcher.h) and decides when one calls for a peer capture here: a fresh failure
// of a job running here, told by a user whose job it is, not captured for already
// (cluster/peer_trust.h, cluster/job_book.h). Loop thread only.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cluster/job_book.h"
#include "cluster/peer_record.h"
#include "cluster/peer_trust.h"
#include "cluster/peer_watcher.h"
#include "cluster/shared_publisher.h"
#include "incident/incident_sink.h"
#include "incident/job_processes.h"

namespace trainwatch::incident {

class SharedDirLink final : public IncidentSink {
 public:
  // Another node's own error at most this long before this node's is of the same attempt.
  static constexpr std::chrono::minutes kSameFailureWindow{2};
  // `outbox`: where records wait for the shared directory (in the state_dir); `may_write`:
  // false once the state_dir is another daemon's.
  SharedDirLink(Env& env, Pipeline& pipeline, JobProcesses& processes, const std::string& outbox,
                std::function<bool()> may_write);
  ~SharedDirLink() override;

  void Configure(const config::DaemonConfig& config) override;
  void Restore(const ops::IncidentHistory& history) override;
  void Recorded(const detect::Incident& incident) override;
  void SettleEnded() override;
  std::string EarlierFailureElsewhere(const detect::Incident& incident,
                                      WallTime since) const override;
  void AddToCapture(capture::CaptureRequest& request) const override;
  void Captured(const capture::CaptureOutcome& outcome) override;
  void Resolved(const ops::Resolution& resolution) override;
  void Stopping() override;
  void FillSnapshot(ops::DaemonSnapshot& snapshot) const override;
  std::uint64_t Activity() const override;

 private:
  // Stamps the record and queues it; false (logged) when the outbox cannot take it.
  bool QueueRecord(cluster::PeerRecord& record);
  // The ids of the jobs whose processes write the watched streams (or the configured one):
  // whose directories the PeerWatcher lists. While a writer names no job, asks for the
  // writers again, backing off.
  std::vector<std::string> JobsHere();
  // Other nodes' new records: a peer incident for the first fresh one of a job failure.
  void OnPeerRecords(const std::vector<cluster::PeerWatcher::Found>& found);
  // Why no peer incident is opened for `record` now; empty: one is.
  std::string NoPeerCaptureBecause(const cluster::PeerRecord& record) const;

  Env& env_;
  Pipeline& pipeline_;
  JobProcesses& processes_;
  std::function<bool()> may_write_;
  config::DaemonConfig config_;
  std::string host_;
  std::unique_ptr<cluster::SharedPublisher> publisher_;
  std::unique_ptr<cluster::PeerWatcher> watcher_;
  std::map<std::string, cluster::PeerRecord> awaiting_bundle_;  // published, capture running
  cluster::JobBook jobs_;  // captures per job, and the records of each (the report's view)
  // Peers' incidents seen while this node's own incident settled: decided once it is written.
  std::vector<cluster::PeerWatcher::Found> deferred_peers_;
  // Looking for the ranks of a writer that names no job (its launcher): when next, how often.
  SteadyTime next_job_scan_{};
  Duration job_scan_every_{0};
  std::set<int> writers_without_job_;
  bool said_no_job_ = false;
  // The owners of this node's processes of each job (JobsHere): whose records are acted on.
  cluster::JobOwners job_uids_;
  std::uint64_t peer_captures_ = 0;  // incidents recorded for a peer's failure
};

}  // namespace trainwatch::incident
