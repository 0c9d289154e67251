#include "ops/status_json.h"

#include <cmath>

#include "core/printable.h"
#include "core/time_format.h"
#include "detect/incident_json.h"
#include "detect/metric_parser.h"
#include "ops/watcher_health.h"

namespace trainwatch::ops {
namespace {

using json = nlohmann::json;

json StreamJson(const StreamSnapshot& stream) {
  json bars = json::array();
  for (const BarSnapshot& bar : stream.bars) {
    json entry = {{"label", bar.label},
                  {"count", bar.count},
                  {"complete", bar.complete},
                  {"advanced", bar.advanced},
                  {"seconds_since_advance", bar.seconds_since_advance}};
    if (bar.interval_p99_seconds) {
      entry["interval_p99_seconds"] = *bar.interval_p99_seconds;
    }
    if (bar.steps_per_second) {
      entry["steps_per_second"] = *bar.steps_per_second;
    }
    if (bar.slow_from_steps_per_second) {
      entry["slow"] = {{"steps_per_second_before", *bar.slow_from_steps_per_second}};
    }
    if (bar.total) {
      entry["total"] = *bar.total;
    }
    bars.push_back(std::move(entry));
  }
  json entry = {{"name", stream.name},
                {"lines", stream.lines},
                {"bytes", stream.bytes},
                {"job_ended", stream.job_ended},
                {"seconds_since_output", stream.seconds_since_output},
                {"bars", std::move(bars)}};
  if (stream.longest_pause_seconds) {
    entry["longest_pause_seconds"] = *stream.longest_pause_seconds;
  }
  if (stream.loss) {
    // As text: JSON has no NaN or infinity, and they are what matters here.
    entry["loss"] = {{"last", detect::LossText(stream.loss->value)},
                     {"step", stream.loss->step ? json(*stream.loss->step) : json(nullptr)},
                     {"writer", stream.loss->writer},
                     {"not_finite_in_a_row", stream.loss->not_finite_in_a_row}};
  }
  return entry;
}

json SourceJson(const SourceSnapshot& source) {
  json files = json::array();
  for (const StreamSnapshot& file : source.files) {
    json entry = StreamJson(file);
    entry["path"] = file.name;
    entry["offset"] = file.offset;
    entry["durable_offset"] = file.durable_offset;
    json writers = json::array();
    for (const source::WriterProcess& writer : file.writers) {
      writers.push_back({{"pid", writer.pid}, {"comm", writer.comm}});
    }
    entry["writers"] = std::move(writers);
    if (file.gone) {
      entry["gone"] = true;
    }
    files.push_back(std::move(entry));
  }
  json streams = json::array();
  for (const StreamSnapshot& stream : source.streams) {
    streams.push_back(StreamJson(stream));
  }
  json entry = {{"name", source.name},          {"tags", source.tags},
                {"paths", source.paths},        {"lines", source.lines},
                {"bytes", source.bytes},        {"files", std::move(files)},
                {"streams", std::move(streams)}};
  if (source.kmsg_running) {
    entry["kmsg"] = *source.kmsg_running;
  }
  if (!source.parked_copies.empty()) {
    entry["parked_copies"] = source.parked_copies;
  }
  if (source.unwatched_count > 0) {
    json listed = json::array();
    for (const auto& [path, why] : source.unwatched) {
      listed.push_back({{"path", path}, {"why", why}});
    }
    entry["unwatched"] = {{"count", source.unwatched_count}, {"files", std::move(listed)}};
  }
  return entry;
}

}  // namespace

json StatusJson(const DaemonSnapshot& snapshot) {
  json sources = json::array();
  for (const SourceSnapshot& source : snapshot.sources) {
    sources.push_back(SourceJson(source));
  }
  json status = {{"version", snapshot.version},
                 {"pid", snapshot.pid},
                 {"config", snapshot.config},
                 {"state_dir", snapshot.state_dir},
                 {"uptime_seconds", snapshot.uptime_seconds},
                 {"rules", snapshot.rules.size()},
                 {"incidents_written", snapshot.incidents_written},
                 {"incidents_file", snapshot.incidents_file},
                 {"sources", std::move(sources)}};
  if (!snapshot.last_incident.empty()) {
    status["last_incident"] = snapshot.last_incident;
  }
  if (!snapshot.pace_rules.empty() || !snapshot.stall_rules.empty()) {
    json pace = json::array();
    for (const DaemonSnapshot::PaceRule& rule : snapshot.pace_rules) {
      pace.push_back({{"id", rule.id},
                      {"slower_by", rule.slower_by},
                      {"for_seconds", rule.for_seconds},
                      {"baseline_seconds", rule.baseline_seconds}});
    }
    json stall = json::array();
    for (const DaemonSnapshot::StallRule& rule : snapshot.stall_rules) {
      stall.push_back({{"id", rule.id},
                       {"stall_after_seconds", rule.stall_after_seconds},
                       {"startup_grace_seconds", rule.startup_grace_seconds},
                       {"factor", rule.factor},
                       {"min_seconds", rule.min_seconds}});
    }
    status["thresholds"] = {{"pace", std::move(pace)}, {"stall", std::move(stall)}};
  }
  if (!snapshot.firings_without_incident.empty()) {
    status["firings_without_incident"] = snapshot.firings_without_incident;
  }
  if (!snapshot.ranks.empty()) {
    json ranks = json::array();
    for (const RankSnapshot& rank : snapshot.ranks) {
      auto optional = [](const std::optional<int>& value) {
        return value ? json(*value) : json(nullptr);
      };
      ranks.push_back({{"label", rank.label},
                       {"pid", rank.pid},
                       {"comm", rank.comm},
                       {"rank_source", rank.rank_source},
                       {"local_rank", optional(rank.local_rank)},
                       {"world_size", optional(rank.world_size)},
                       {"node_rank", optional(rank.node_rank)},
                       {"devices", rank.devices},
                       {"launcher", rank.launcher}});
    }
    status["ranks"] = std::move(ranks);
  }
  if (snapshot.job) {
    status["job"] = detect::JobJson(*snapshot.job);
  }
  if (const auto& settling = snapshot.settling_incident) {
    status["settling_incident"] = {{"id", settling->id},
                                   {"kind", settling->kind},
                                   {"summary", settling->summary},
                                   {"rules", settling->rules}};
  }
  if (snapshot.alertmanager) {
    const auto& am = *snapshot.alertmanager;
    std::vector<std::string> urls;
    for (const std::string& url : am.urls) {
      urls.push_back(ShownUrl(url));  // status is read by whoever may run the CLI
    }
    status["alertmanager"] = {{"urls", urls},
                              {"open", am.open},
                              {"ends_unsent", am.ends_unsent},
                              {"posts_ok", am.posts_ok},
                              {"posts_failed", am.posts_failed},
                              {"dropped", am.dropped},
                              {"error", am.error}};
  }
  status["workers"] = {{"busy", snapshot.workers_busy},
                       {"oldest_seconds", snapshot.oldest_work_seconds}};
  // (A worker busy for kWorkerStuckSeconds is a blind spot: `health` below says so.)
  // Where trainwatch is blind now: "no incident" means "nothing seen" only while this is
  // empty.
  json blind = json::array();
  for (const BlindSpot& spot : BlindSpots(snapshot)) {
    blind.push_back({{"reason", spot.reason}, {"what", spot.what}, {"why", spot.why}});
  }
  status["health"] = {{"watching", blind.empty()},
                      {"blind", std::move(blind)},
                      {"loop_lag_ms", std::lround(snapshot.loop_lag_seconds * 1000)}};
  if (snapshot.process_watch_stalled_seconds) {
    status["health"]["process_watch_stalled_seconds"] = *snapshot.process_watch_stalled_seconds;
  }
  if (snapshot.shared) {
    status["shared"] = {{"dir", snapshot.shared->dir},
                        {"published", snapshot.shared->published},
                        {"pending", snapshot.shared->pending},
                        {"error", snapshot.shared->error},
                        {"watched_jobs", snapshot.shared->watched_jobs},
                        {"listings", snapshot.shared->listings},
                        {"peer_records", snapshot.shared->peer_records},
                        {"peer_captures", snapshot.shared->peer_captures},
                        {"watch_error", snapshot.shared->watch_error}};
  }
  json open = json::array();
  for (const OpenIncidentSnapshot& incident : snapshot.open_incidents) {
    open.push_back(
        {{"id", incident.id}, {"kind", incident.kind}, {"opened", FormatUtc(incident.opened)}});
  }
  status["open_incidents"] = std::move(open);
  return status;
}

}  // namespace trainwatch::ops
