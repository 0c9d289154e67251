// DeviceToolSink: hears each capture's device tool runs (capture::CaptureOutcome::device_tools)
// and, through a DeviceToolWatch, tells the `processes` sources of a tool that does not answer:
// a wedged device becomes an incident of its own (rules/blocked.yaml's blocked.device_tool),
// not only a collector's timeout in a bundle. The lines go out on the loop's next turn, not
// while the incident flow is still telling its sinks of the capture. Loop thread only.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/env.h"
#include "incident/incident_sink.h"
#include "watch/device_tool_watch.h"

namespace trainwatch::app {

class DeviceToolSink final : public incident::IncidentSink {
 public:
  using Tell = std::function<void(const std::vector<std::string>& lines)>;
  DeviceToolSink(Env& env, Tell tell)
      : tell_(std::move(tell)), soon_(env.NewTimer([this] { TellNow(); })) {}

  void Captured(const capture::CaptureOutcome& outcome) override {
    std::vector<std::string> lines = watch_.Observe(outcome.device_tools);
    if (lines.empty()) {
      return;
    }
    waiting_.insert(waiting_.end(), std::make_move_iterator(lines.begin()),
                    std::make_move_iterator(lines.end()));
    if (soon_) {
      soon_->Start(std::chrono::milliseconds(0), {});
    }
  }
  // Its timer closes before the loop does; lines not yet told are dropped with the daemon.
  void Stopping() override { soon_.reset(); }

 private:
  void TellNow() {
    if (tell_ && !waiting_.empty()) {
      tell_(std::exchange(waiting_, {}));
    }
  }

  Tell tell_;
  watch::DeviceToolWatch watch_;
  std::vector<std::string> waiting_;
  std::unique_ptr<LoopTimer> soon_;
};

}  // namespace trainwatch::app
