// The device table of a report: each accelerator as a row (utilisation, memory, temperature,
// power, errors), read from the CSV the capture's hl-smi and nvidia-smi queries wrote
// (`hl-smi -Q ... -f csv`, `nvidia-smi --query-gpu=... --format=csv`: a header naming the
// fields, units in brackets, values with or without units) and from `npu-smi info`'s table
// (its AICore column). A value the tool did not give stays empty. Pure; any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trainwatch::report {

struct DeviceRow {
  std::string tool;  // "hl-smi", "nvidia-smi", "npu-smi"
  std::string index;
  std::string name;
  std::string bus_id;
  std::string utilization;  // "98 %"
  std::string memory;       // "512 / 32768 MiB"
  std::string temperature;  // "36 C"
  std::string power;        // "103 W"
  std::string errors;       // uncorrected ECC errors, where the query asked for them
};

// The rows of a CSV with a header line; lines that do not have the header's column count are
// skipped (an error message the tool printed in between, a cut last line).
std::vector<DeviceRow> ParseSmiCsv(std::string_view tool, std::string_view text);

// `npu-smi info`: one row per chip, with its AICore utilisation.
std::vector<DeviceRow> ParseNpuSmiRows(std::string_view text);

}  // namespace trainwatch::report
