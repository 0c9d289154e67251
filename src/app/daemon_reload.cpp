// The Daemon's reload: SIGHUP and `trainwatch reload` (see app/running_daemon.h).
#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "app/running_daemon.h"
#include "detect/example_checker.h"
#include "diagnose/stack_rules.h"

namespace trainwatch::app {

void Daemon::Reload(ReloadDone done) {
  if (reloading_) {
    // The reload under way may have read the files before they were changed.
    reload_again_ = true;
    if (done) {
      queued_waiters_.push_back(std::move(done));
    }
    return;
  }
  if (done) {
    reload_waiters_.push_back(std::move(done));
  }
  spdlog::info("reloading {}", setup_.config.file);
  Result<rules::ConfiguredRules> setup = rules::LoadConfiguredRules(setup_.config.file);
  if (!setup) {
    spdlog::error("reload rejected, still running on the previous config and rules:\n{}",
                  setup.error().message);
    FinishReload(Error{"reload rejected, still running on the previous config and rules:\n" +
                       setup.error().message});
    return;
  }
  // A rule's examples are its tests (as `trainwatch check --config` runs them): a rule that
  // no longer fires on its own `fires` lines would watch for nothing.
  struct Checked {
    rules::ConfiguredRules setup;
    std::vector<Diagnostic> problems;
    Result<watch::PreparedSources> prepared;  // built when the examples behaved
    std::vector<Diagnostic> notes;
  };
  if (guest_) {
    LeaveToHost(setup->config);  // before its sources are built: they are the host's
  }
  auto checked = std::make_shared<Checked>(
      Checked{std::move(*setup), {}, Error{"not built: an example did not behave"}, {}});
  reloading_ = true;
  env_->RunOnPool(
      [checked, wrapping = !options_.wrap.empty(),
       cache_dir = RuleCacheDir(setup_.config.state_dir)] {
        std::vector<Diagnostic> example_notes;
        checked->problems = detect::CheckExamples(checked->setup.rules, &example_notes);
        diagnose::CheckStackExamples(checked->setup.rules, checked->problems);
        if (checked->problems.empty()) {
          checked->prepared = watch::PrepareSources(checked->setup.config, checked->setup.rules,
                                                    wrapping, cache_dir, checked->notes);
        }
      },
      [this, checked] {
        reloading_ = false;
        if (stopping_) {
          FinishReload(Error{"the daemon is stopping; the reload was not applied"});
          return;
        }
        FinishReload(ApplyReload(std::move(checked->setup), checked->problems,
                                 std::move(checked->prepared), checked->notes));
        if (reload_again_) {
          reload_again_ = false;
          reload_waiters_ = std::move(queued_waiters_);
          queued_waiters_.clear();
          Reload();
        }
      });
}

void Daemon::FinishReload(const Result<std::string>& verdict) {
  std::vector<ReloadDone> waiters = std::move(reload_waiters_);
  reload_waiters_.clear();
  for (const ReloadDone& done : waiters) {
    done(verdict);
  }
}

Result<std::string> Daemon::ApplyReload(rules::ConfiguredRules setup,
                                        const std::vector<Diagnostic>& problems,
                                        Result<watch::PreparedSources> prepared,
                                        const std::vector<Diagnostic>& notes) {
  if (!problems.empty()) {
    std::string text;
    for (const Diagnostic& problem : problems) {
      text += "\n";
      text += FormatDiagnostic(problem);
    }
    const std::string message = fmt::format(
        "reload rejected, still running on the previous config and rules: {} rule "
        "example(s) did not behave:{}",
        problems.size(), text);
    spdlog::error("{}", message);
    return Error{message};
  }
  const std::size_t rules = setup.rules.size();
  if (Status applied = Apply(std::move(setup), /*initial=*/false, std::move(prepared), notes);
      !applied) {
    const std::string message =
        "reload rejected, still running on the previous config and rules: " +
        applied.error().message;
    spdlog::error("{}", message);
    return Error{message};
  }
  std::string running = fmt::format("{} sources, {} rules", sources_->size(), rules);
  spdlog::info("reloaded: {}", running);
  idle_memory_->AfterWork();
  UpdateStatus();
  return running;
}

void Daemon::LeaveToHost(config::DaemonConfig& config) {
  // The sources are the host daemon's. So are the shared directory's outbox and the
  // Alertmanager store in the state_dir: a second writer of them would post the host's
  // alerts again after it ended them, and capture for peers twice on this node.
  config.sources.clear();
  if (!config.cluster.shared_dir.empty() || !config.alertmanager.urls.empty()) {
    spdlog::info(
        "beside the daemon of this state_dir, the command's incidents are recorded but not "
        "published to the shared directory or posted to Alertmanager");
  }
  config.cluster.shared_dir.clear();
  config.alertmanager.urls.clear();
}

}  // namespace trainwatch::app
