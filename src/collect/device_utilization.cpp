#include "collect/device_utilization.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <charconv>
#include <optional>

#include "core/split.h"

namespace trainwatch::collect {

std::vector<config::CommandConfig> DeviceUtilizationCommands() {
  auto command = [](const std::string& tool, std::vector<std::string> argv) {
    config::CommandConfig query;
    query.name = tool + "-utilization";
    query.argv = std::move(argv);
    query.as = "device/" + tool + "-utilization.csv";
    query.timeout = std::chrono::milliseconds(5000);
    query.max_output_bytes = 64 * 1024;
    return query;
  };
  config::CommandConfig npu = command("npu-smi", {"npu-smi", "info"});
  npu.as = "device/npu-smi-utilization.txt";
  return {command("hl-smi", {"hl-smi", "-Q", "index,utilization.aip", "-f", "csv,noheader"}),
          command("nvidia-smi", {"nvidia-smi", "--query-gpu=index,utilization.gpu",
                                 "--format=csv,noheader,nounits"}),
          std::move(npu)};
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

namespace {

// The cells of a table row "| a | b | c |" -> {"a", "b", "c"} (trimmed); none for a border.
std::vector<std::string_view> Cells(std::string_view line) {
  std::vector<std::string_view> cells;
  const std::size_t first = line.find_first_not_of(' ');
  if (first == std::string_view::npos || line[first] != '|') {
    return cells;
  }
  line.remove_prefix(first + 1);
  ForEachPiece(line, '|', [&](std::string_view cell) {
    const std::size_t begin = cell.find_first_not_of(' ');
    const std::size_t end = cell.find_last_not_of(' ');
    cells.push_back(begin == std::string_view::npos ? std::string_view()
                                                    : cell.substr(begin, end - begin + 1));
  });
  if (!cells.empty() && cells.back().empty()) {
    cells.pop_back();  // after the closing '|' (a trailing space in some versions)
  }
  return cells;
}

// The whitespace-separated words of a cell.
std::vector<std::string_view> Words(std::string_view cell) {
  std::vector<std::string_view> words;
  ForEachPiece(cell, ' ', [&](std::string_view word) {
    if (!word.empty()) {
      words.push_back(word);
    }
  });
  return words;
}

std::optional<int> Integer(std::string_view word) {
  int value = 0;
  const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (error != std::errc() || end != word.data() + word.size()) {
    return std::nullopt;
  }
  return value;
}

std::optional<double> Number(std::string_view word) {
  double value = 0;
  const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (error != std::errc() || end != word.data() + word.size()) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

std::map<int, double> ParseNpuSmiInfo(std::string_view text) {
  std::map<int, double> percent;
  std::optional<int> npu;  // the NPU of the row before, when it was a chip's first row
  ForEachPiece(text, '\n', [&](std::string_view line) {
    const std::vector<std::string_view> cells = Cells(line);
    std::optional<int> after = std::nullopt;
    if (cells.size() >= 3) {
      const std::vector<std::string_view> first = Words(cells[0]);
      const std::vector<std::string_view> third = Words(cells[2]);
      if (first.size() == 2 && Integer(first[0]) && !Integer(first[1])) {
        after = Integer(first[0]);  // "0     910B2C": a chip's first row
      } else if (npu && !first.empty() && first.size() <= 2 && Integer(first[0]) &&
                 Integer(first.back()) && !third.empty()) {
        // "0 [phy-id]" | bus-id | "<aicore> <memory> / <total> ..."
        if (std::optional<double> aicore = Number(third[0])) {
          percent[first.size() == 2 ? *Integer(first[1]) : *npu] = *aicore;
        }
      }
    }
    npu = after;
  });
  return percent;
}

bool IsDeviceTool(std::string_view tool) {
  return tool == "hl-smi" || tool == "nvidia-smi" || tool == "npu-smi";
}

std::map<int, double> ParseUtilization(std::string_view tool, std::string_view text) {
  return tool == "npu-smi" ? ParseNpuSmiInfo(text) : ParseUtilizationCsv(text);
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

namespace {

// The variable that binds a rank to `tool`'s devices by the index the tool lists.
std::string_view BindingVariable(std::string_view tool) {
  if (tool == "nvidia-smi") {
    return "CUDA_VISIBLE_DEVICES";
  }
  if (tool == "hl-smi") {
    return "HABANA_VISIBLE_DEVICES";
  }
  return tool == "npu-smi" ? "ASCEND_RT_VISIBLE_DEVICES" : "";
}

std::optional<int> Index(std::string_view text) {
  int value = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

const DeviceUtilization* DeviceOfRank(
    const std::vector<DeviceUtilization>& devices,
    const std::vector<std::pair<std::string, std::string>>& binding,
    std::optional<int> local_rank) {
  if (devices.empty()) {
    return nullptr;
  }
  const std::string& tool = devices.front().tool;
  std::optional<int> index = local_rank;
  for (const auto& [name, value] : binding) {
    // Module ids are not hl-smi's indices; a container runtime's selection renumbers the
    // devices inside the container, and which numbering the tool here lists is not known.
    if ((name == "HABANA_VISIBLE_MODULES" && tool == "hl-smi") ||
        (name == "NVIDIA_VISIBLE_DEVICES" && tool == "nvidia-smi" && value != "all") ||
        (name == "ASCEND_VISIBLE_DEVICES" && tool == "npu-smi" && value != "all")) {
      return nullptr;
    }
    if (name != BindingVariable(tool)) {
      continue;
    }
    std::vector<std::string_view> listed;
    ForEachPiece(value, ',', [&](std::string_view part) { listed.push_back(part); });
    if (listed.size() == 1) {
      index = Index(listed.front());
    } else if (local_rank && static_cast<std::size_t>(*local_rank) < listed.size()) {
      index = Index(listed[static_cast<std::size_t>(*local_rank)]);
    } else {
      return nullptr;
    }
  }
  if (!index) {
    return nullptr;
  }
  const auto found = std::find_if(devices.begin(), devices.end(), [&](const DeviceUtilization& d) {
    return d.tool == tool && d.index == *index;
  });
  return found == devices.end() ? nullptr : &*found;
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
