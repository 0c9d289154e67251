#include "ops/daemon_metrics.h"

#include <cmath>
#include <map>
#include <string>
#include <string_view>

#include "ops/watcher_health.h"

namespace trainwatch::ops {
namespace {

double Seconds(std::chrono::system_clock::time_point at) {
  return std::chrono::duration<double>(at.time_since_epoch()).count();
}

MetricFamily Family(std::string name, std::string help, std::string type) {
  return MetricFamily{std::move(name), std::move(help), std::move(type), {}};
}

// One sample per label value counted, and per value in `known` (at 0 until counted): a
// counter that first appears at 1 hides its first increase from rate() and increase().
void AddByLabel(MetricFamily& family, const std::string& label,
                const std::map<std::string, std::uint64_t>& counts,
                const std::vector<std::string>& known = {}) {
  std::map<std::string, std::uint64_t> all = counts;
  for (const std::string& value : known) {
    all.try_emplace(value, 0);
  }
  for (const auto& [value, count] : all) {
    family.samples.push_back({{{label, value}}, static_cast<double>(count)});
  }
}

}  // namespace

std::vector<MetricFamily> DaemonMetricFamilies(const DaemonSnapshot& snapshot) {
  std::vector<MetricFamily> families;

  MetricFamily start = Family("trainwatch_start_time_seconds",
                              "When the daemon started, in seconds since the epoch.", "gauge");
  start.samples.push_back({{{"version", snapshot.version}}, Seconds(snapshot.started)});
  families.push_back(std::move(start));

  // The liveness signal: the textfile is rewritten at least every minute while the daemon
  // runs (MetricsTextfile::kHeartbeat), so this stays within a minute of time() unless the
  // daemon is stopped or stuck.
  MetricFamily written = Family("trainwatch_metrics_written_timestamp_seconds",
                                "When these metrics were written, in seconds since the epoch; "
                                "at least every 60 s while the daemon runs.",
                                "gauge");
  written.samples.push_back({{}, Seconds(snapshot.taken)});
  families.push_back(std::move(written));

  // The watcher's own health (ops/watcher_health.h): a blind spot is a failure that may go
  // unseen, so that "no alert" is not taken for "all is well".
  MetricFamily blind = Family("trainwatch_blind_spots",
                              "Parts of the watch that are blind now, by reason: unread_file, "
                              "kmsg_not_read, worker_stuck, process_watch_stalled, loop_slow.",
                              "gauge");
  std::map<std::string, std::uint64_t> blind_by_reason;
  for (const std::string_view reason : kBlindReasons) {
    blind_by_reason[std::string(reason)] = 0;
  }
  for (const BlindSpot& spot : BlindSpots(snapshot)) {
    ++blind_by_reason[spot.reason];
  }
  AddByLabel(blind, "reason", blind_by_reason);
  families.push_back(std::move(blind));
  MetricFamily lag = Family("trainwatch_loop_lag_seconds",
                            "How late the daemon's one-second tick came, at worst, over the last "
                            "minute.",
                            "gauge");
  lag.samples.push_back({{}, snapshot.loop_lag_seconds});
  families.push_back(std::move(lag));

  MetricFamily firings =
      Family("trainwatch_rule_firings_total",
             "Lines (or events) each rule fired on, incidents or not.", "counter");
  AddByLabel(firings, "rule", snapshot.counters.firings_by_rule, snapshot.rules);
  families.push_back(std::move(firings));

  MetricFamily incidents =
      Family("trainwatch_incidents_total", "Incidents recorded, by kind.", "counter");
  AddByLabel(incidents, "kind", snapshot.counters.incidents_by_kind,
             {"crash", "hang", "device", "diverged", "slow", "warning", "manual", "peer"});
  families.push_back(std::move(incidents));

  MetricFamily verdicts =
      Family("trainwatch_incidents_by_verdict_total",
             "Incidents recorded, by their verdict's cause and action.", "counter");
  for (const auto& [verdict, count] : snapshot.counters.incidents_by_verdict) {
    verdicts.samples.push_back(
        {{{"cause", verdict.first}, {"action", verdict.second}}, static_cast<double>(count)});
  }
  families.push_back(std::move(verdicts));

  MetricFamily open = Family("trainwatch_open_incidents",
                             "Incidents recorded and not yet resolved (progress resumed, the job "
                             "restarted, or an operator acknowledged them).",
                             "gauge");
  open.samples.push_back({{}, static_cast<double>(snapshot.open_incidents.size())});
  families.push_back(std::move(open));

  MetricFamily resolved =
      Family("trainwatch_incidents_resolved_total",
             "Incidents resolved, by how: progress, restart, line (a line said it ended) or ack.",
             "counter");
  AddByLabel(resolved, "how", snapshot.counters.resolved_by_how,
             {"progress", "restart", "ack", "line"});
  families.push_back(std::move(resolved));

  if (snapshot.shared) {
    MetricFamily published = Family("trainwatch_shared_records_published_total",
                                    "Incident records put on the shared directory.", "counter");
    published.samples.push_back({{}, static_cast<double>(snapshot.shared->published)});
    families.push_back(std::move(published));
    MetricFamily pending =
        Family("trainwatch_shared_records_pending",
               "Incident records waiting in the outbox for the shared directory.", "gauge");
    pending.samples.push_back({{}, static_cast<double>(snapshot.shared->pending)});
    families.push_back(std::move(pending));
    const std::pair<const char*, std::pair<const char*, std::uint64_t>> watch_counts[] = {
        {"trainwatch_shared_listings_total",
         {"Job directories listed on the shared directory (one per watched job per poll).",
          snapshot.shared->listings}},
        {"trainwatch_peer_records_total",
         {"Incident records of the job's other nodes seen on the shared directory.",
          snapshot.shared->peer_records}},
        {"trainwatch_peer_captures_total",
         {"Peer incidents: this node's capture for another node's incident.",
          snapshot.shared->peer_captures}}};
    for (const auto& [name, help_count] : watch_counts) {
      MetricFamily family = Family(name, help_count.first, "counter");
      family.samples.push_back({{}, static_cast<double>(help_count.second)});
      families.push_back(std::move(family));
    }
  }

  if (snapshot.alertmanager) {
    const auto& am = *snapshot.alertmanager;
    MetricFamily posts = Family("trainwatch_alertmanager_posts_total",
                                "POSTs to Alertmanager, by result (ok: a 2xx answer).", "counter");
    posts.samples.push_back({{{"result", "ok"}}, static_cast<double>(am.posts_ok)});
    posts.samples.push_back({{{"result", "error"}}, static_cast<double>(am.posts_failed)});
    families.push_back(std::move(posts));
    const std::tuple<const char*, const char*, const char*, std::uint64_t> alert_counts[] = {
        {"trainwatch_alerts_open", "Alerts of open incidents, posted while open.", "gauge",
         am.open},
        {"trainwatch_alerts_unsent_ends",
         "Resolved incidents whose alert's end some Alertmanager has not taken yet.", "gauge",
         am.ends_unsent},
        {"trainwatch_alerts_dropped_total",
         "Alerts dropped because more than 256 were owed to Alertmanager.", "counter", am.dropped}};
    for (const auto& [name, help, type, value] : alert_counts) {
      MetricFamily family = Family(name, help, type);
      family.samples.push_back({{}, static_cast<double>(value)});
      families.push_back(std::move(family));
    }
  }

  const std::pair<const char*, std::pair<const char*, std::uint64_t>> bundle_counts[] = {
      {"trainwatch_bundles_written_total", {"Bundles written.", snapshot.counters.bundles_written}},
      {"trainwatch_bundle_bytes_total",
       {"Bytes of the bundles written (compressed).", snapshot.counters.bundle_bytes}},
      {"trainwatch_bundles_failed_total",
       {"Captures that wrote no bundle (disk full, unwritable directory).",
        snapshot.counters.bundles_failed}},
      {"trainwatch_bundles_deleted_total",
       {"Old bundles removed to stay within the retention limits.",
        snapshot.counters.bundles_deleted}}};
  for (const auto& [name, what] : bundle_counts) {
    MetricFamily family = Family(name, what.first, "counter");
    family.samples.push_back({{}, static_cast<double>(what.second)});
    families.push_back(std::move(family));
  }

  MetricFamily timeouts = Family("trainwatch_collector_timeouts_total",
                                 "Collectors killed at their deadline or abandoned (a wedged "
                                 "device tool), by collector.",
                                 "counter");
  AddByLabel(timeouts, "collector", snapshot.counters.collector_timeouts, snapshot.collectors);
  families.push_back(std::move(timeouts));

  {
    MetricFamily runs =
        Family("trainwatch_hook_runs_total", "on_incident hooks started, by hook.", "counter");
    const std::vector<std::string>& hooks = snapshot.hooks;
    AddByLabel(runs, "hook", snapshot.hook_counts.runs, hooks);
    families.push_back(std::move(runs));
    MetricFamily failures = Family("trainwatch_hook_failures_total",
                                   "on_incident hooks that failed, timed out or were missing, "
                                   "by hook.",
                                   "counter");
    AddByLabel(failures, "hook", snapshot.hook_counts.failures, hooks);
    families.push_back(std::move(failures));
    MetricFamily dropped = Family("trainwatch_hook_incidents_dropped_total",
                                  "Incidents whose hooks never ran: more than 16 waited, or the "
                                  "daemon stopped first.",
                                  "counter");
    dropped.samples.push_back({{}, static_cast<double>(snapshot.hook_counts.dropped)});
    families.push_back(std::move(dropped));
  }

  MetricFamily lines = Family("trainwatch_source_lines_total", "Lines read, by source.", "counter");
  MetricFamily bytes = Family("trainwatch_source_bytes_total", "Bytes read, by source.", "counter");
  MetricFamily files = Family("trainwatch_source_files", "Files followed now, by source.", "gauge");
  MetricFamily advance = Family("trainwatch_progress_last_advance_timestamp_seconds",
                                "When each progress bar last advanced (its first sight until "
                                "it does), in seconds since the epoch.",
                                "gauge");
  MetricFamily steps = Family("trainwatch_progress_position",
                              "The count each progress bar shows now (its step).", "gauge");
  MetricFamily loss = Family("trainwatch_training_loss",
                             "The training loss each stream printed last (NaN and +Inf as such), "
                             "as a metric rule read it.",
                             "gauge");
  for (const SourceSnapshot& source : snapshot.sources) {
    const std::vector<std::pair<std::string, std::string>> by_source = {{"source", source.name}};
    lines.samples.push_back({by_source, static_cast<double>(source.lines)});
    bytes.samples.push_back({by_source, static_cast<double>(source.bytes)});
    files.samples.push_back({by_source, static_cast<double>(source.files.size())});
    auto add_bars = [&](const StreamSnapshot& stream) {
      for (const BarSnapshot& bar : stream.bars) {
        const std::vector<std::pair<std::string, std::string>> labels = {
            {"source", source.name}, {"stream", stream.name}, {"bar", bar.key}};
        // Whole seconds: the steady-to-wall conversion jitters below that, and an unchanged
        // file is not rewritten.
        advance.samples.push_back({labels, std::round(Seconds(bar.last_advance))});
        steps.samples.push_back({labels, static_cast<double>(bar.count)});
      }
      if (stream.loss) {
        loss.samples.push_back(
            {{{"source", source.name}, {"stream", stream.name}}, stream.loss->value});
      }
    };
    for (const StreamSnapshot& file : source.files) {
      // A file rotated or deleted away is being finished: its bars are history, and a new
      // file at its path would repeat their series.
      if (!file.gone) {
        add_bars(file);
      }
    }
    for (const StreamSnapshot& stream : source.streams) {
      add_bars(stream);
    }
  }
  for (MetricFamily* family : {&lines, &bytes, &files, &advance, &steps, &loss}) {
    families.push_back(std::move(*family));
  }
  return families;
}

}  // namespace trainwatch::ops
