#include "watch/device_tool_watch.h"

#include <fmt/format.h>

namespace trainwatch::watch {
namespace {

constexpr const char* kMeaning =
    "the device management tool does not answer: the device or its driver may be wedged";

}  // namespace

std::vector<std::string> DeviceToolWatch::Observe(const std::vector<capture::DeviceToolRun>& runs) {
  // Per tool, in the order first run: did any run answer, time out, stay stuck.
  struct Seen {
    bool answered = false;
    const capture::DeviceToolRun* timed_out = nullptr;
    const capture::DeviceToolRun* stuck = nullptr;
  };
  std::vector<std::string> order;
  std::map<std::string, Seen> seen;
  for (const capture::DeviceToolRun& run : runs) {
    if (!seen.contains(run.tool)) {
      order.push_back(run.tool);
    }
    Seen& tool = seen[run.tool];
    tool.answered = tool.answered || run.answered;
    if (run.timed_out && tool.timed_out == nullptr) {
      tool.timed_out = &run;
    }
    if (run.stuck && tool.stuck == nullptr) {
      tool.stuck = &run;
    }
  }
  std::vector<std::string> lines;
  for (const std::string& name : order) {
    const Seen& now = seen[name];
    Tool& tool = tools_[name];
    if (now.answered) {
      tool = Tool{};
      continue;
    }
    if (now.stuck == nullptr && now.timed_out == nullptr) {
      continue;
    }
    ++tool.timeouts;
    if (tool.told) {
      continue;
    }
    if (now.stuck != nullptr) {
      tool.told = true;
      lines.push_back(fmt::format(
          "trainwatch: {} (collector {}) would not die when killed at its {:.0f} s deadline, "
          "stuck in the kernel (uninterruptible sleep): {}",
          name, now.stuck->name, now.stuck->deadline_seconds, kMeaning));
    } else if (tool.timeouts >= kTimeoutsInARow) {
      tool.told = true;
      lines.push_back(fmt::format(
          "trainwatch: {} (collector {}) did not answer within its {:.0f} s deadline, {} "
          "captures in a row: {}",
          name, now.timed_out->name, now.timed_out->deadline_seconds, tool.timeouts, kMeaning));
    }
  }
  return lines;
}

}  // namespace trainwatch::watch
