#include "incident/hook_sink.h"

namespace trainwatch::incident {

HookSink::HookSink(Env& env, std::string incidents_file, std::function<void()> on_idle)
    : runner_(env), incidents_file_(std::move(incidents_file)) {
  runner_.OnIdle(std::move(on_idle));
}

void HookSink::Configure(const config::DaemonConfig& config) {
  runner_.Configure(config.on_incident);
  names_ = config::CommandNames(config.on_incident);
}

void HookSink::FillSnapshot(ops::DaemonSnapshot& snapshot) const {
  snapshot.hooks = names_;
  snapshot.hook_counts = runner_.counts();
}

std::uint64_t HookSink::Activity() const {
  std::uint64_t sum = 0;
  for (const auto* counts : {&runner_.counts().runs, &runner_.counts().failures}) {
    for (const auto& [name, count] : *counts) {
      sum = sum * 31 + count;
    }
  }
  return sum * 31 + runner_.counts().dropped;
}

}  // namespace trainwatch::incident
