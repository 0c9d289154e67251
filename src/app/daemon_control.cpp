// The Daemon's answers: the control socket's requests, its status line and the metrics
// textfile (see app/running_daemon.h).
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "app/running_daemon.h"
#include "collect/rank_map.h"
#include "ops/control_request.h"
#include "ops/daemon_metrics.h"
#include "ops/service_notify.h"
#include "ops/snapshot_redaction.h"

namespace trainwatch::app {

namespace {
using json = nlohmann::json;
// How long `trainwatch status` waits for the ranks from /proc before it answers with the ones
// read last: it answers at once even while a hung file system holds the pool.
constexpr auto kStatusWait = std::chrono::milliseconds(50);
}  // namespace

void Daemon::UpdateStatus() {
  std::string status = "watching " + std::to_string(sources_->files()) + " files in " +
                       std::to_string(sources_->size()) + " sources; " +
                       std::to_string(incidents_->written()) + " incidents";
  if (!incidents_->last_incident().empty()) {
    status += " (last " + incidents_->last_incident() + ")";
  }
  if (status != last_status_) {
    ops::NotifyServiceManager("STATUS=" + status);
    last_status_ = status;
  }
}

ops::DaemonSnapshot Daemon::Snapshot() {
  const SteadyTime now = env_->SteadyNow();
  ops::DaemonSnapshot snapshot;
  snapshot.version = TRAINWATCH_VERSION;
  snapshot.pid = ::getpid();
  snapshot.config = setup_.config.file;
  snapshot.state_dir = setup_.config.state_dir;
  snapshot.uptime_seconds =
      std::chrono::duration_cast<std::chrono::seconds>(now - started_).count();
  snapshot.started = started_wall_;
  snapshot.taken = env_->WallNow();
  ops::AddRules(setup_.rules, snapshot);
  incidents_->FillSnapshot(snapshot);
  snapshot.sources = sources_->Snapshot(now, env_->WallNow());
  const Env::PoolWork pool = env_->PoolWorkNow();
  snapshot.workers_busy = pool.running;
  snapshot.oldest_work_seconds =
      std::chrono::duration_cast<std::chrono::seconds>(pool.oldest).count();
  if (const std::optional<std::chrono::seconds> stalled = sources_->ProcessWatchStalledFor(now)) {
    snapshot.process_watch_stalled_seconds = stalled->count();
  }
  snapshot.loop_lag_seconds = std::chrono::duration<double>(loop_lag_.WorstRecently(now)).count();
  // A bar's label and key are log text: status and the metrics' labels get them redacted.
  ops::RedactBars(snapshot, [this] { return incidents_->redactor_for_text(); });
  return snapshot;
}

std::uint64_t Daemon::MetricsActivity() const {
  // Every number the file holds moves with one of these (a bar only with its stream's lines).
  return setups_applied_ * 1000003 + incidents_->Activity() * 31 + sources_->Activity();
}

void Daemon::WriteMetrics(bool now) {
  auto render = [this] { return ops::PrometheusText(ops::DaemonMetricFamilies(Snapshot())); };
  if (now) {
    metrics_.Write(MetricsActivity(), render);
  } else {
    metrics_.Tick(env_->SteadyNow(), MetricsActivity(), render);
  }
}

void Daemon::HandleControl(const std::string& request, const ops::ControlServer::Reply& reply) {
  Result<ops::ControlCommand> command = ops::ParseControlRequest(request);
  if (!command) {
    reply(command.error().message);
    return;
  }
  if (command->kind == ops::ControlCommand::Kind::kReload) {
    Reload([reply](const Result<std::string>& verdict) { reply(ops::ReloadReply(verdict)); });
    return;
  }
  if (command->kind == ops::ControlCommand::Kind::kAck) {
    reply(ops::AckReply(incidents_->Acknowledge(command->id, command->reason)));
    return;
  }
  if (command->kind == ops::ControlCommand::Kind::kStatus) {
    AnswerStatus(reply);
    return;
  }
  incident::IncidentFlow::ManualOptions options{command->container, command->logs, command->copy,
                                                command->stacks};
  // The answer waits for the bundle: the caller wants its path.
  incidents_->Manual(
      command->reason, options,
      [reply, file = incidents_->incidents_file()](const capture::CaptureOutcome& outcome) {
        reply(ops::SnapshotReply(outcome, file));
      });
}

void Daemon::AnswerStatus(const ops::ControlServer::Reply& reply) {
  std::erase_if(pending_status_, [](const auto& pending) { return pending->answered; });
  auto pending = std::make_shared<PendingStatus>();
  pending->reply = reply;
  std::weak_ptr<PendingStatus> weak = pending;
  pending->deadline = env_->NewTimer([this, weak] {
    if (auto waiting = weak.lock(); waiting && !waiting->answered) {
      waiting->answered = true;
      ReplyStatus(waiting->reply, /*ranks_fresh=*/false);
    }
  });
  pending->deadline->Start(kStatusWait, {});
  pending_status_.push_back(std::move(pending));
  MapStatusRanks();
}

void Daemon::MapStatusRanks() {
  if (mapping_status_ranks_) {
    return;  // the map under way answers this request too; a wedged pool gets one at a time
  }
  mapping_status_ranks_ = true;
  capture::CaptureRequest known;
  sources_->FillCapture(known);
  auto map = std::make_shared<collect::RankMap>();
  env_->RunOnPool(
      [map, pids = std::vector<pid_t>(known.pids.begin(), known.pids.end()),
       pattern = setup_.config.capture.process_pattern,
       proc_root = env_->proc_root()] { *map = collect::MapRanks(pids, pattern, proc_root); },
      [this, map] {
        mapping_status_ranks_ = false;
        status_ranks_ = std::move(*map);
        status_ranks_at_ = env_->SteadyNow();
        if (stopping_) {
          return;  // the control socket is closed
        }
        for (const std::shared_ptr<PendingStatus>& pending : std::exchange(pending_status_, {})) {
          if (!pending->answered) {
            pending->answered = true;
            ReplyStatus(pending->reply, /*ranks_fresh=*/true);
          }
        }
      });
}

void Daemon::ReplyStatus(const ops::ControlServer::Reply& reply, bool ranks_fresh) {
  ops::DaemonSnapshot snapshot = Snapshot();
  if (status_ranks_) {
    snapshot.ranks = ops::RankSnapshots(*status_ranks_);
  }
  snapshot.job = incidents_->JobOf(nullptr);
  json status = ops::StatusJson(snapshot);
  if (!ranks_fresh) {
    std::string stale = "the ranks were not read from /proc within " +
                        std::to_string(kStatusWait.count()) + " ms (" +
                        std::to_string(snapshot.workers_busy) +
                        " thread-pool workers busy, the oldest for " +
                        std::to_string(snapshot.oldest_work_seconds) + " s); ";
    if (status_ranks_) {
      stale += "these are the ones read " +
               std::to_string(std::chrono::duration_cast<std::chrono::seconds>(env_->SteadyNow() -
                                                                               status_ranks_at_)
                                  .count()) +
               " s ago";
    } else {
      stale += "none has been read yet";
    }
    status["ranks_stale"] = std::move(stale);
  }
  reply(status.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace trainwatch::app
