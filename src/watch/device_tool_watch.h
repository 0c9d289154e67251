// DeviceToolWatch: a device management tool (hl-smi, nvidia-smi, npu-smi) that does not answer
// is evidence of a wedged device or driver, not only a collector's timeout. Fed each capture's
// runs of them (capture::DeviceToolRun): a tool that would not die when killed (stuck in
// uninterruptible sleep) is told at once, one killed at its deadline kTimeoutsInARow captures in
// a row is told then; each as a line for the `processes` sources (rules/blocked.yaml's
// blocked.device_tool), once until the tool answers again. A capture in which one run of the
// tool answered clears it. Pure; one thread at a time.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "capture/capture_types.h"

namespace trainwatch::watch {

class DeviceToolWatch {
 public:
  static constexpr int kTimeoutsInARow = 2;

  // The lines to tell after one capture's runs.
  std::vector<std::string> Observe(const std::vector<capture::DeviceToolRun>& runs);

 private:
  struct Tool {
    int timeouts = 0;  // captures in a row in which it did not answer
    bool told = false;
  };
  std::map<std::string, Tool> tools_;
};

}  // namespace trainwatch::watch
