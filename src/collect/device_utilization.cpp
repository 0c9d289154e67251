#include "collect/device_utilization.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>

#include "core/split.h"

namespace trainwatch::collect {

std::vector<config::CommandConfig> DeviceUtilizationCommands() {
  auto command = [](std::string tool, std::vector<std::string> argv) {
    config::CommandConfig query;
    query.name = tool + "-utilization";
    query.argv = std::move(argv);
    query.as = "device/" + tool + "-utilization.csv";
    query.timeout = std::chrono::milliseconds(5000);
    query.max_output_bytes = 64 * 1024;
    return query;
  };
  return {command("hl-smi", {"hl-smi", "-Q", "index,utilization.aip", "-f", "csv,noheader"}),
          command("nvidia-smi", {"nvidia-smi", "--query-gpu=index,utilization.gpu",
                                 "--format=csv,noheader,nounits"})};
}

std::map<int, double> ParseUtilizationCsv(std::string_view text) {
  static const RE2 kLine(R"(^\s*(\d+)\s*,\s*(\d+(?:\.\d+)?)\s*%?\s*$)");
  std::map<int, double> percent;
  ForEachPiece(text, '\n', [&](std::string_view line) {
    int index = 0;
    double value = 0;
    if (RE2::FullMatch(line, kLine, &index, &value)) {
      percent[index] = value;
    }
  });
  return percent;
}

std::vector<DeviceUtilization> PairSamples(const std::string& tool,
                                           const std::map<int, double>& first,
                                           const std::map<int, double>& second) {
  std::vector<DeviceUtilization> pairs;
  for (const auto& [index, value] : first) {
    if (const auto later = second.find(index); later != second.end()) {
      pairs.push_back({tool, index, value, later->second});
    }
  }
  return pairs;
}

std::string BusyDevicesNote(const std::vector<DeviceUtilization>& devices, double seconds) {
  std::string indices;
  double low = 100;
  double high = 0;
  std::string tool;
  for (const DeviceUtilization& device : devices) {
    if (device.first >= kBusyDevicePercent && device.second >= kBusyDevicePercent) {
      if (!indices.empty()) {
        indices += ", ";
      }
      indices += std::to_string(device.index);
      low = std::min({low, device.first, device.second});
      high = std::max({high, device.first, device.second});
      tool = device.tool;
    }
  }
  if (indices.empty()) {
    return {};
  }
  return fmt::format(
      "{} device(s) {} at {:.0f}-{:.0f}% utilisation in both samples, {:.1f} s apart: a long "
      "compile or step rather than a hang?",
      tool, indices, low, high, seconds);
}

}  // namespace trainwatch::collect
