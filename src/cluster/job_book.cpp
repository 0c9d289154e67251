#include "cluster/job_book.h"

#include <algorithm>

namespace trainwatch::cluster {

void JobBook::Captured(const std::string& job, SteadyTime at) {
  if (job.empty()) {
    return;
  }
  std::erase_if(captured_, [&](const auto& entry) { return at - entry.second >= cooldown_; });
  SteadyTime& last = captured_[job];
  last = std::max(last, at);
}

std::optional<Duration> JobBook::CapturedAgo(const std::string& job, SteadyTime now) const {
  const auto last = captured_.find(job);
  if (last == captured_.end() || now - last->second >= cooldown_) {
    return std::nullopt;
  }
  return std::chrono::duration_cast<Duration>(now - last->second);
}

void JobBook::Remember(const PeerRecord& record) {
  if (record.kind == "peer") {
    // A node's capture for another's slow incident (the only peer capture published) is no
    // failure of the job: kept, it could push out the incident it was made for.
    return;
  }
  if (!records_.contains(record.job_id) && records_.size() >= kMaxJobs) {
    records_.erase(records_.begin());  // an arbitrary old job: a bound, not a policy
  }
  std::map<std::string, PeerRecord>& records = records_[record.job_id];
  records[PeerFileName(record.incident_id, record.node)] = record;
  while (records.size() > kMaxRecords) {
    records.erase(std::min_element(
        records.begin(), records.end(),
        [](const auto& a, const auto& b) { return a.second.opened_ms < b.second.opened_ms; }));
  }
}

std::vector<PeerRecord> JobBook::RecordsOf(const std::string& job) const {
  std::vector<PeerRecord> out;
  if (const auto records = records_.find(job); !job.empty() && records != records_.end()) {
    for (const auto& [name, record] : records->second) {
      out.push_back(record);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const PeerRecord& a, const PeerRecord& b) { return a.opened_ms < b.opened_ms; });
  return out;
}

}  // namespace trainwatch::cluster
