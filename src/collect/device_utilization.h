// Device utilisation, sampled twice during a capture: a device busy in both samples while the
// job looks stalled is a long compile or step rather than a hang (on Gaudi, graph compilation
// keeps a bar at 0% for minutes). The queries of hl-smi and nvidia-smi in their CSV modes and
// npu-smi's table (it has no CSV mode), and their outputs read back. Pure; any thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/capture_config.h"

namespace trainwatch::collect {

// One query per tool, named "<tool>-utilization": index and utilisation of every device.
std::vector<config::CommandConfig> DeviceUtilizationCommands();

// "0, 98" or "0, 98 %" lines (index, utilisation) -> {index: percent}; other lines ignored.
std::map<int, double> ParseUtilizationCsv(std::string_view text);

// `npu-smi info` -> {device: AICore %}. Each chip is two table rows: "| NPU Name | Health |
// ..." then "| Chip [Phy-ID|Device] | Bus-Id | AICore(%) ...". The device is the chip's
// Phy-ID or Device column where the table has one (two dies per NPU on A3), else its NPU.
std::map<int, double> ParseNpuSmiInfo(std::string_view text);

// Whether `tool` (a command's file name) is one of the device management tools: hl-smi,
// nvidia-smi, npu-smi.
bool IsDeviceTool(std::string_view tool);

// The output of the query named "<tool>-utilization" read by that tool's parser.
std::map<int, double> ParseUtilization(std::string_view tool, std::string_view text);

struct DeviceUtilization {
  std::string tool;  // "hl-smi", "nvidia-smi", "npu-smi"
  int index = 0;
  double first = 0;   // percent, at the capture's start
  double second = 0;  // percent, a few seconds later
};

// Both samples of each device that answered both times.
std::vector<DeviceUtilization> PairSamples(const std::string& tool,
                                           const std::map<int, double>& first,
                                           const std::map<int, double>& second);

// Which of `devices` one rank drives: the index its tool lists for the rank's binding
// (`binding`: the *_VISIBLE_* variables as RankIdentity holds them) and `local_rank`. The
// tool's variable (nvidia-smi: CUDA_VISIBLE_DEVICES, hl-smi: HABANA_VISIBLE_DEVICES, npu-smi:
// ASCEND_RT_VISIBLE_DEVICES) naming one index is that device; naming a list, the local_rank-th
// of it; unset, the local_rank-th device (the launchers' one device a rank). Null when neither
// says, a name is no index (a GPU UUID), HABANA_VISIBLE_MODULES binds it (module ids are not
// hl-smi's indices), or a container runtime's NVIDIA_VISIBLE_DEVICES / ASCEND_VISIBLE_DEVICES
// selects devices (renumbered inside the container). CUDA numbers devices fastest first
// unless CUDA_DEVICE_ORDER=PCI_BUS_ID, nvidia-smi by bus: they agree on a node of one GPU model.
const DeviceUtilization* DeviceOfRank(
    const std::vector<DeviceUtilization>& devices,
    const std::vector<std::pair<std::string, std::string>>& binding, std::optional<int> local_rank);

// What busy devices say about a stall: "hl-smi devices 0-1 at 97-100% in both samples, 2.0 s
// apart: a long compile or step rather than a hang?"; empty when no device was busy (at least
// kBusyDevicePercent) in both.
inline constexpr double kBusyDevicePercent = 90;
std::string BusyDevicesNote(const std::vector<DeviceUtilization>& devices, double seconds);

}  // namespace trainwatch::collect
