// The Prometheus textfile: the daemon's counters and the state of what it watches, rewritten
// atomically every `metrics.interval` for node_exporter's textfile collector.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "app/daemon_internal.h"
#include "core/atomic_file.h"

namespace trainwatch::app::daemon_internal {
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

std::vector<std::string> NamesOf(const std::vector<config::CommandConfig>& commands) {
  std::vector<std::string> names;
  for (const config::CommandConfig& command : commands) {
    names.push_back(command.name);
  }
  return names;
}

}  // namespace

void Daemon::ReconfigureMetrics() {
  const bool writing = !guest_ && setup_.config.metrics.enabled;
  if (!metrics_path_.empty() && (!writing || metrics_path_ != setup_.config.metrics.path)) {
    // A reload moved or disabled the textfile: the old one would be exported forever, and
    // beside the new one in node_exporter's directory every series would be there twice.
    if (::unlink(metrics_path_.c_str()) != 0 && errno != ENOENT) {
      spdlog::warn("cannot remove the old metrics file {}: {}", metrics_path_,
                   std::strerror(errno));
    }
    metrics_path_.clear();
  }
  next_metrics_ = {};  // at the next tick
}

void Daemon::MaybeWriteMetrics(Clock::time_point now) {
  // On the tick rather than a timer of its own: an idle daemon wakes once a second, not more.
  if (now >= next_metrics_) {
    next_metrics_ = now + setup_.config.metrics.interval;
    WriteMetrics();
  }
}

void Daemon::WriteMetrics() {
  if (guest_ || !setup_.config.metrics.enabled || setup_.config.metrics.path.empty()) {
    return;
  }
  // A few kilobytes to a local file, like the offsets: not worth a thread-pool round trip. An
  // idle daemon's numbers do not change: neither rendering nor rewriting them again would be
  // its main cost (unless someone removed the file).
  const std::uint64_t activity = MetricsActivity();
  const bool same_file =
      metrics_path_ == setup_.config.metrics.path && ::access(metrics_path_.c_str(), F_OK) == 0;
  if (same_file && activity == metrics_activity_) {
    return;
  }
  std::string text = PrometheusText(MetricFamilies());
  if (same_file && text == metrics_text_) {
    metrics_activity_ = activity;
    return;
  }
  const Status written = WriteFileAtomically(setup_.config.metrics.path, text, 0644);
  if (!written && written.error().message != metrics_error_) {
    spdlog::error("cannot write the metrics file: {} (retried every {} ms)",
                  written.error().message, setup_.config.metrics.interval.count());
  } else if (written && !metrics_error_.empty()) {
    spdlog::info("metrics file {} written again", setup_.config.metrics.path);
  }
  metrics_error_ = written ? "" : written.error().message;
  if (written) {
    metrics_path_ = setup_.config.metrics.path;
    metrics_text_ = std::move(text);
    metrics_activity_ = activity;
  }
}

std::uint64_t Daemon::MetricsActivity() const {
  // Every number the file holds moves with one of these (a bar only with its stream's lines);
  // a collision of two different states in this sum only delays a rewrite to the next change.
  std::uint64_t sum = setups_applied_ * 1000003 + incidents_written_ + counters_.bundles_written +
                      counters_.bundle_bytes + counters_.bundles_failed + counters_.bundles_deleted;
  for (const auto* counts : {&counters_.firings_by_rule, &counters_.collector_timeouts}) {
    for (const auto& [name, count] : *counts) {
      sum = sum * 31 + count;
    }
  }
  if (hooks_) {
    for (const auto* counts : {&hooks_->counts().runs, &hooks_->counts().failures}) {
      for (const auto& [name, count] : *counts) {
        sum = sum * 31 + count;
      }
    }
    sum = sum * 31 + hooks_->counts().dropped;
  }
  auto add = [&](const SourceState& source) {
    sum = sum * 31 + source.lines;
    sum = sum * 31 + source.bytes;
    sum = sum * 31 + (source.tails ? source.tails->files().size() : 0);
  };
  for (const auto& source : sources_) {
    add(*source);
  }
  if (wrap_source_) {
    add(*wrap_source_);
  }
  return sum;
}

std::vector<MetricFamily> Daemon::MetricFamilies() const {
  const Clock::time_point now = Clock::now();
  const auto wall_now = std::chrono::system_clock::now();
  std::vector<MetricFamily> families;

  MetricFamily start = Family("trainwatch_start_time_seconds",
                              "When the daemon started, in seconds since the epoch.", "gauge");
  start.samples.push_back({{{"version", TRAINWATCH_VERSION}}, Seconds(started_wall_)});
  families.push_back(std::move(start));

  MetricFamily firings =
      Family("trainwatch_rule_firings_total",
             "Lines (or events) each rule fired on, incidents or not.", "counter");
  std::vector<std::string> rule_ids;
  for (const rules::Rule& rule : setup_.rules) {
    rule_ids.push_back(rule.id);
  }
  AddByLabel(firings, "rule", counters_.firings_by_rule, rule_ids);
  families.push_back(std::move(firings));

  MetricFamily incidents =
      Family("trainwatch_incidents_total", "Incidents recorded, by kind.", "counter");
  AddByLabel(incidents, "kind", counters_.incidents_by_kind,
             {"crash", "hang", "device", "warning", "manual"});
  families.push_back(std::move(incidents));

  const std::pair<const char*, std::pair<const char*, std::uint64_t>> bundle_counts[] = {
      {"trainwatch_bundles_written_total", {"Bundles written.", counters_.bundles_written}},
      {"trainwatch_bundle_bytes_total",
       {"Bytes of the bundles written (compressed).", counters_.bundle_bytes}},
      {"trainwatch_bundles_failed_total",
       {"Captures that wrote no bundle (disk full, unwritable directory).",
        counters_.bundles_failed}},
      {"trainwatch_bundles_deleted_total",
       {"Old bundles removed to stay within the retention limits.", counters_.bundles_deleted}}};
  for (const auto& [name, what] : bundle_counts) {
    MetricFamily family = Family(name, what.first, "counter");
    family.samples.push_back({{}, static_cast<double>(what.second)});
    families.push_back(std::move(family));
  }

  MetricFamily timeouts = Family("trainwatch_collector_timeouts_total",
                                 "Collectors killed at their deadline or abandoned (a wedged "
                                 "device tool), by collector.",
                                 "counter");
  AddByLabel(timeouts, "collector", counters_.collector_timeouts,
             NamesOf(setup_.config.capture.commands));
  families.push_back(std::move(timeouts));

  if (hooks_) {
    MetricFamily runs =
        Family("trainwatch_hook_runs_total", "on_incident hooks started, by hook.", "counter");
    const std::vector<std::string> hooks = NamesOf(setup_.config.on_incident);
    AddByLabel(runs, "hook", hooks_->counts().runs, hooks);
    families.push_back(std::move(runs));
    MetricFamily failures = Family("trainwatch_hook_failures_total",
                                   "on_incident hooks that failed, timed out or were missing, "
                                   "by hook.",
                                   "counter");
    AddByLabel(failures, "hook", hooks_->counts().failures, hooks);
    families.push_back(std::move(failures));
    MetricFamily dropped = Family("trainwatch_hook_incidents_dropped_total",
                                  "Incidents whose hooks never ran: more than 16 waited, or the "
                                  "daemon stopped first.",
                                  "counter");
    dropped.samples.push_back({{}, static_cast<double>(hooks_->counts().dropped)});
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
  auto add_source = [&](const SourceState& source) {
    const std::string& name = source.config.name;
    lines.samples.push_back({{{"source", name}}, static_cast<double>(source.lines)});
    bytes.samples.push_back({{{"source", name}}, static_cast<double>(source.bytes)});
    files.samples.push_back(
        {{{"source", name}}, static_cast<double>(source.tails ? source.tails->files().size() : 0)});
  };
  auto add_bars = [&](const SourceState& source, const Stream& stream) {
    for (const auto& [key, bar] : stream.progress().bars()) {
      const std::vector<std::pair<std::string, std::string>> labels = {
          {"source", source.config.name}, {"stream", stream.identity().name}, {"bar", key}};
      // Whole seconds: the steady-to-wall conversion jitters below that, and an unchanged
      // file is not rewritten.
      advance.samples.push_back({labels, std::round(Seconds(wall_now - (now - bar.last_advance)))});
      steps.samples.push_back({labels, static_cast<double>(bar.count)});
    }
  };
  auto each_source = [&](const SourceState& source) {
    add_source(source);
    if (source.tails) {
      for (const auto& [id, file] : source.tails->files()) {
        // A file rotated or deleted away is being finished: its bars are history, and a new
        // file at its path would repeat their series.
        if (!file->gone_since) {
          add_bars(source, *file->stream);
        }
      }
    }
    for (const auto& stream : source.wrap_streams) {
      add_bars(source, *stream);
    }
  };
  for (const auto& source : sources_) {
    each_source(*source);
  }
  if (wrap_source_) {
    each_source(*wrap_source_);
  }
  for (MetricFamily* family : {&lines, &bytes, &files, &advance, &steps}) {
    families.push_back(std::move(*family));
  }
  return families;
}

}  // namespace trainwatch::app::daemon_internal
