#include "cli/job_command.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <vector>

#include "cli/cli_config.h"
#include "cli/commands.h"
#include "cluster/first_failure.h"
#include "cluster/peer_record.h"
#include "cluster/peer_watcher.h"
#include "cluster/shared_listing.h"
#include "core/printable.h"
#include "core/time_format.h"
#include "detect/attempt_text.h"

namespace trainwatch::cli {
namespace {

namespace fs = std::filesystem;
using cluster::PeerRecord;
using json = nlohmann::ordered_json;

std::string Clock(std::int64_t ms) {
  return FormatUtc(std::chrono::system_clock::time_point(std::chrono::milliseconds(ms)));
}

// The records of one job directory, oldest first (by each node's clock); unreadable files are
// named on `err` and skipped.
std::vector<PeerRecord> ReadJob(const fs::path& dir, std::ostream& err) {
  std::vector<PeerRecord> records;
  std::error_code error;
  for (const fs::directory_entry& entry : cluster::ListEntries(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (!cluster::IsPeerFileName(name)) {
      continue;
    }
    if (records.size() == cluster::PeerWatcher::kMaxRecordsPerJob) {
      err << "trainwatch job: " << Printable(dir.string()) << " holds more than " << records.size()
          << " records; the rest are skipped\n";
      break;
    }
    // Never a FIFO, a link or a file past the record's cap (a planted one must not hang or
    // flood this command), and the message printable (a name may carry escapes).
    Result<PeerRecord> record = cluster::ReadPeerRecordFile(entry.path().string());
    if (!record) {
      err << "trainwatch job: " << Printable(record.error().message) << "; skipped\n";
      continue;
    }
    records.push_back(std::move(*record));
  }
  std::sort(records.begin(), records.end(), [](const PeerRecord& a, const PeerRecord& b) {
    return std::tie(a.opened_ms, a.node) < std::tie(b.opened_ms, b.node);
  });
  return records;
}

// hardware > driver > infrastructure > application > unknown: the job's verdict is its most
// telling node's (a device error outranks the timeouts it caused elsewhere).
int CauseRank(const std::string& cause) {
  static const std::map<std::string, int> kRank = {
      {"hardware", 4}, {"driver", 3}, {"infrastructure", 2}, {"application", 1}};
  const auto it = kRank.find(cause);
  return it == kRank.end() ? 0 : it->second;
}

// The job's first failure among the records `ignored` leaves (cluster/first_failure.h);
// `earliest` is set to the earliest of them. A node's capture for another's failure (a
// `peer` record: one for a slow incident is published) is no failure of its own, unless no
// other record is left. REQUIRES: a record not ignored.
const PeerRecord& FirstFailure(const std::vector<PeerRecord>& records,
                               const std::function<bool(const PeerRecord&)>& ignored,
                               const PeerRecord*& earliest) {
  std::vector<const PeerRecord*> kept;
  std::vector<cluster::IncidentOpening> openings;
  for (const bool with_peers : {false, true}) {
    for (const PeerRecord& record : records) {
      if (!ignored(record) && (with_peers || record.kind != "peer")) {
        kept.push_back(&record);
        openings.push_back({record.opened_ms, record.first_rank.has_value()});
      }
    }
    if (!kept.empty()) {
      break;
    }
  }
  earliest = kept.front();
  return *kept[cluster::FirstFailureIndex(openings)];
}

// Who is slow, where the job's records tell: the rank its own report names, and the node whose
// ranks waited for their peers least (each node's capture of a slow incident sampled them).
void PrintSlowness(const std::vector<PeerRecord>& records,
                   const std::function<bool(const PeerRecord&)>& claimed, std::ostream& out) {
  std::set<int> named;
  std::map<std::string, diagnose::NodeWaits> latest;  // per node; the records are in time order
  for (const PeerRecord& record : records) {
    if (claimed(record)) {
      continue;
    }
    if (record.straggler_rank && named.insert(*record.straggler_rank).second) {
      out << "straggler  rank " << *record.straggler_rank
          << ", the slowest by the job's own report (" << record.node << ")\n";
    }
    if (record.waiting) {
      latest[record.node] = *record.waiting;
    }
  }
  std::vector<diagnose::NodeWaits> nodes;
  std::vector<std::string> names;
  for (const auto& [node, waits] : latest) {
    names.push_back(node);
    nodes.push_back(waits);
  }
  if (const std::optional<diagnose::SlowNode> slow = diagnose::SlowNodeByWaits(nodes, names)) {
    out << "slow node  " << names[slow->index] << ": " << slow->reason << "\n";
  }
}

json RecordJson(const PeerRecord& record) { return json::parse(cluster::PeerRecordJson(record)); }

int ListJobs(const fs::path& jobs, const JobOptions& options, std::ostream& out,
             std::ostream& err) {
  std::error_code error;
  std::vector<std::pair<std::int64_t, json>> listed;
  for (const fs::directory_entry& dir : cluster::ListEntries(jobs, error)) {
    const std::vector<PeerRecord> records = ReadJob(dir.path(), err);
    if (records.empty()) {
      continue;
    }
    std::map<std::string, int> nodes;
    for (const PeerRecord& record : records) {
      ++nodes[record.node];
    }
    const PeerRecord* earliest = nullptr;
    const PeerRecord& first = FirstFailure(
        records, [](const PeerRecord&) { return false; }, earliest);
    listed.emplace_back(records.back().opened_ms, json{{"job_id", records.front().job_id},
                                                       {"incidents", records.size()},
                                                       {"nodes", nodes.size()},
                                                       {"first", Clock(first.opened_ms)},
                                                       {"last", Clock(records.back().opened_ms)},
                                                       {"first_node", first.node}});
  }
  if (error) {
    err << "trainwatch job: " << jobs.string() << ": " << error.message() << "\n";
    return kExitError;
  }
  std::sort(listed.begin(), listed.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  if (options.json) {
    json all = json::array();
    for (auto& [last, entry] : listed) {
      all.push_back(std::move(entry));
    }
    out << all.dump(2) << "\n";
    return 0;
  }
  if (listed.empty()) {
    out << "no job has published an incident in " << jobs.string() << "\n";
  }
  for (const auto& [last, entry] : listed) {
    out << entry["job_id"].get<std::string>() << ": " << entry["incidents"].dump()
        << " incidents from " << entry["nodes"].dump() << " nodes, first on "
        << entry["first_node"].get<std::string>() << " at " << entry["first"].get<std::string>()
        << ", last at " << entry["last"].get<std::string>() << "\n";
  }
  return 0;
}

void PrintJob(const std::vector<PeerRecord>& records, const std::string& id, std::ostream& out) {
  std::map<std::string, int> nodes;
  for (const PeerRecord& record : records) {
    ++nodes[record.node];
  }
  // Who may speak for the job: anyone can set a job id, only root (the publishing daemon) the
  // uid. Where records disagree, the uid of most nodes is the job's; the others are another
  // user's claims, shown but kept out of the verdict and the suspects.
  std::map<int, std::set<std::string>> nodes_by_uid;
  for (const PeerRecord& record : records) {
    if (record.uid) {
      nodes_by_uid[*record.uid].insert(record.node);
    }
  }
  std::optional<int> job_uid;
  for (const auto& [uid, of] : nodes_by_uid) {
    if (!job_uid || of.size() > nodes_by_uid[*job_uid].size()) {
      job_uid = uid;
    }
  }
  auto claimed = [&](const PeerRecord& record) {
    return nodes_by_uid.size() > 1 && record.uid && record.uid != job_uid;
  };
  const PeerRecord* earliest = nullptr;
  const PeerRecord& first = FirstFailure(records, claimed, earliest);
  out << "job " << id << ": " << records.size() << " incidents from " << nodes.size()
      << " nodes (times are each node's own clock)\n";
  out << "first      " << first.node
      << (first.first_rank ? " rank " + std::to_string(*first.first_rank) : "") << " at "
      << Clock(first.opened_ms) << ": " << first.kind << " — " << first.summary << "\n";
  if (&first != earliest) {
    out << "           " << earliest->node << " opened "
        << std::chrono::duration<double>(
               std::chrono::milliseconds(first.opened_ms - earliest->opened_ms))
               .count()
        << " s earlier with only its ranks' consequences of it (" << earliest->summary << ")\n";
  }
  for (const PeerRecord& other : records) {
    if (&first == earliest && other.node != first.node && other.kind != "peer" &&
        other.opened_ms - first.opened_ms <=
            std::chrono::duration_cast<std::chrono::milliseconds>(cluster::kSkewAllowance)
                .count()) {
      out << "           " << other.node << " opened "
          << std::chrono::duration<double>(
                 std::chrono::milliseconds(other.opened_ms - first.opened_ms))
                 .count()
          << " s later, within the " << cluster::kSkewAllowance.count()
          << " s allowed for clock skew between nodes: either may have failed first\n";
      break;
    }
  }

  if (nodes_by_uid.size() > 1) {
    out << "users      the records name " << nodes_by_uid.size() << " users: the job's is uid "
        << *job_uid << " (most nodes); the others'";
    for (const auto& [uid, of] : nodes_by_uid) {
      if (uid != *job_uid) {
        out << " uid " << uid << " (" << *of.begin() << (of.size() > 1 ? ", ..." : "") << ")";
      }
    }
    out << " are another user's claim to the job: not in the verdict\n";
  }
  // The first failure's verdict, unless another node's names a graver cause.
  const PeerRecord* telling = &first;
  for (const PeerRecord& record : records) {
    if (!claimed(record) && CauseRank(record.cause) > CauseRank(telling->cause)) {
      telling = &record;
    }
  }
  out << "verdict    cause " << telling->cause << ", action " << telling->action << " (from "
      << telling->node << ": " << telling->verdict << ")\n";
  for (const PeerRecord& record : records) {
    if (claimed(record)) {
      continue;
    }
    for (const cluster::PeerSuspect& suspect : record.suspects) {
      out << "suspect    " << record.node << " " << suspect.label << ": " << suspect.reason << "\n";
    }
  }
  PrintSlowness(records, claimed, out);
  // The job's attempts as each node counts them: how many runs failed, and the latest's word.
  const PeerRecord* latest_attempt = nullptr;
  for (const PeerRecord& record : records) {
    // The first in time of the latest attempt: the node that failed it, not those that followed.
    if (!claimed(record) && record.attempt &&
        (latest_attempt == nullptr || *record.attempt > *latest_attempt->attempt)) {
      latest_attempt = &record;
    }
  }
  if (latest_attempt != nullptr) {
    out << "attempts   " << *latest_attempt->attempt << " failed on " << latest_attempt->node
        << ", the latest at " << detect::StepText(latest_attempt->step)
        << (latest_attempt->retry_why.empty() ? "" : "; " + latest_attempt->retry_why) << "\n";
  }
  out << "incidents:\n";
  for (const PeerRecord& record : records) {
    out << "  " << Clock(record.opened_ms) << "  " << record.node
        << (record.node_rank ? " (node rank " + std::to_string(*record.node_rank) + ")" : "")
        << "  " << record.kind << "  " << record.incident_id
        << (record.attempt ? "  attempt " + std::to_string(*record.attempt) + " (" +
                                 detect::StepText(record.step) + ")"
                           : "")
        << (record.uid ? "  uid " + std::to_string(*record.uid) : "")
        << (claimed(record) ? "  (another user's claim)" : "") << "\n    " << record.summary
        << "\n    bundle " << (record.bundle.empty() ? "(not yet, or none)" : record.bundle)
        << "\n";
  }
}

}  // namespace

int RunJob(const JobOptions& options, std::ostream& out, std::ostream& err) {
  std::string shared = options.shared_dir;
  if (shared.empty()) {
    Result<config::DaemonConfig> config = LoadCliConfig(options.config_path, err);
    if (!config) {
      err << "trainwatch job: " << config.error().message << "\n";
      return kExitError;
    }
    shared = config->cluster.shared_dir;
    if (shared.empty()) {
      err << "trainwatch job: the config sets no cluster.shared_dir (or give --shared-dir)\n";
      return kExitError;
    }
  }
  const fs::path jobs = fs::path(shared) / "jobs";
  if (options.id.empty()) {
    return ListJobs(jobs, options, out, err);
  }
  std::vector<PeerRecord> records = ReadJob(jobs / cluster::JobDirName(options.id), err);
  // Two ids can make one directory name ("a:b", "a_b"): only this one's records.
  std::erase_if(records, [&](const PeerRecord& record) { return record.job_id != options.id; });
  if (records.empty()) {
    err << "trainwatch job: no incident of job '" << options.id << "' in " << jobs.string() << "\n";
    return kExitError;
  }
  if (options.json) {
    json all = json::array();
    for (const PeerRecord& record : records) {
      all.push_back(RecordJson(record));
    }
    out << all.dump(2) << "\n";
    return 0;
  }
  PrintJob(records, options.id, out);
  return 0;
}

}  // namespace trainwatch::cli
