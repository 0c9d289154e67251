#include "ops/daemon_snapshot.h"

#include <variant>

namespace trainwatch::ops {
namespace {

std::int64_t SecondsBetween(detect::SteadyTime then, detect::SteadyTime now) {
  return std::chrono::duration_cast<std::chrono::seconds>(now - then).count();
}

}  // namespace

StreamSnapshot SnapshotOf(const detect::StreamDetector& stream, detect::SteadyTime now,
                          std::chrono::system_clock::time_point wall_now) {
  StreamSnapshot snapshot;
  snapshot.name = stream.identity().name;
  snapshot.lines = stream.lines();
  snapshot.bytes = stream.bytes();
  snapshot.job_ended = stream.progress().ended();
  snapshot.seconds_since_output = SecondsBetween(stream.last_output(), now);
  snapshot.loss = stream.last_loss();
  if (const Duration pause = stream.progress().longest_quiet(); pause.count() > 0) {
    snapshot.longest_pause_seconds = std::chrono::duration<double>(pause).count();
  }
  for (const auto& [key, bar] : stream.progress().bars()) {
    BarSnapshot entry;
    entry.key = key;
    entry.label = bar.label;
    entry.count = bar.count;
    entry.total = bar.total;
    entry.complete = bar.complete;
    entry.advanced = bar.advanced;
    entry.seconds_since_advance = SecondsBetween(bar.last_advance, now);
    if (const std::optional<Duration> p99 = bar.IntervalP99()) {
      entry.interval_p99_seconds = std::chrono::duration<double>(*p99).count();
    }
    // The pace the pace rules judge, over the last minute, and the one a slowdown left.
    constexpr auto kPaceShown = std::chrono::seconds(60);
    entry.steps_per_second =
        detect::StepsPerSecond(bar.pace, now - kPaceShown, now, kPaceShown / 4);
    if (!bar.slow.empty()) {
      entry.slow_from_steps_per_second = bar.slow.front().steps_before;
    }
    entry.last_advance = wall_now - std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                        now - bar.last_advance);
    snapshot.bars.push_back(std::move(entry));
  }
  return snapshot;
}

std::vector<RankSnapshot> RankSnapshots(const collect::RankMap& map) {
  std::vector<RankSnapshot> ranks;
  for (const collect::RankProcess& process : map.ranks) {
    RankSnapshot rank;
    rank.label = process.label();
    rank.pid = process.pid;
    rank.comm = process.comm;
    rank.rank_source = process.rank_source;
    rank.local_rank = process.identity.local_rank;
    rank.world_size = process.identity.world_size;
    rank.node_rank = process.identity.node_rank;
    for (const auto& [name, value] : process.identity.devices) {
      rank.devices.push_back(name + "=" + value);
    }
    rank.launcher = process.launcher;
    ranks.push_back(std::move(rank));
  }
  return ranks;
}

void AddRules(const std::vector<rules::Rule>& rules, DaemonSnapshot& snapshot) {
  auto seconds = [](Duration duration) { return std::chrono::duration<double>(duration).count(); };
  for (const rules::Rule& rule : rules) {
    snapshot.rules.push_back(rule.id);
    if (const auto* pace = std::get_if<rules::PaceDetector>(&rule.detector)) {
      snapshot.pace_rules.push_back(
          {rule.id, pace->slower_by, seconds(pace->hold), seconds(pace->baseline)});
    } else if (const auto* progress = std::get_if<rules::ProgressDetector>(&rule.detector)) {
      snapshot.stall_rules.push_back({rule.id, seconds(progress->stall_after),
                                      seconds(progress->startup_grace), progress->factor,
                                      seconds(progress->min)});
    }
  }
}

}  // namespace trainwatch::ops
