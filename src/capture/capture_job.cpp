#include "capture/capture_job.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "collect/device_utilization.h"

namespace trainwatch::capture {

std::string CaptureParts::Pending() const {
  std::string pending;
  for (const auto& [part, what] : {std::pair{CapturePart::kBuiltins, "the in-process collectors"},
                                   std::pair{CapturePart::kCommands, "the tools"},
                                   std::pair{CapturePart::kRanks, "the ranks' stacks"}}) {
    if (!done(part)) {
      pending += (pending.empty() ? "" : ", ") + std::string(what);
    }
  }
  return pending;
}

CaptureOutcome OutcomeOf(const CaptureJob& job, SteadyTime now, WallTime wall_now) {
  CaptureOutcome outcome;
  outcome.incident_id = job.request.incident.id;
  outcome.reduced = job.reduced;
  outcome.deleted = job.deleted;
  outcome.capture_seconds = std::chrono::duration<double>(now - job.started).count();
  if (!job.request.incident.firings.empty()) {
    outcome.since_first_firing =
        std::chrono::duration<double>(wall_now - job.request.incident.firings.front().time).count();
  } else if (const auto& peer = job.request.incident.peer) {
    // The peer's first firing line, on its clock: the job-wide latency (skew included).
    outcome.since_first_firing =
        std::chrono::duration<double>(wall_now.time_since_epoch() -
                                      std::chrono::milliseconds(peer->opened_ms))
            .count();
  }
  outcome.host = job.host;
  if (job.ranks) {
    outcome.ranks_summary = job.ranks->diagnosis.Summary();
    outcome.suspects = job.ranks->diagnosis.suspects;
    outcome.stacks_say = job.ranks->stack_verdict;
    outcome.roster = RosterText(*job.ranks);
    outcome.devices_note = job.ranks->devices_note;
    outcome.ranks_seconds = job.ranks->seconds;
    std::vector<std::map<std::string, int>> waits;
    for (const RankEvidence& rank : job.ranks->ranks) {
      if (rank.alive) {
        waits.push_back(rank.waits);
      }
    }
    outcome.waiting = diagnose::SumWaits(waits);
  }
  for (const collect::CollectorResult& result : job.commands) {
    if (result.status == collect::CollectorStatus::kTimedOut ||
        result.status == collect::CollectorStatus::kAbandoned) {
      outcome.timed_out.push_back(result.name);
    }
    const auto command =
        std::find_if(job.config.commands.begin(), job.config.commands.end(),
                     [&](const config::CommandConfig& each) { return each.name == result.name; });
    if (command == job.config.commands.end() || command->argv.empty()) {
      continue;
    }
    const std::string tool = std::filesystem::path(command->argv.front()).filename().string();
    if (!collect::IsDeviceTool(tool) || result.status == collect::CollectorStatus::kSkipped ||
        result.status == collect::CollectorStatus::kMissing) {
      continue;  // not run: says nothing of the device
    }
    outcome.device_tools.push_back({tool, result.name,
                                    result.status == collect::CollectorStatus::kOk ||
                                        result.status == collect::CollectorStatus::kFailed,
                                    result.status == collect::CollectorStatus::kTimedOut,
                                    result.status == collect::CollectorStatus::kAbandoned,
                                    std::chrono::duration<double>(command->timeout).count()});
  }
  if (job.early_written && outcome.since_first_firing > 0) {
    outcome.early_since_first_firing =
        outcome.since_first_firing - std::chrono::duration<double>(now - job.early_at).count();
  }
  if (job.written) {
    outcome.path = job.written->path;
    outcome.bytes = job.written->bytes;
    if (job.reduced) {
      outcome.error = job.reduced_why;
    }
  } else if (job.early_written) {
    // The early bundle stays: the incident has that much evidence.
    outcome.reduced = false;
    outcome.path = job.early_written->path;
    outcome.bytes = job.early_written->bytes;
    outcome.error = "the complete bundle was not written (" + job.written.error().message +
                    "); the early one stays (" + job.early_why + ")";
  } else {
    outcome.error = job.written.error().message;
  }
  return outcome;
}

}  // namespace trainwatch::capture
