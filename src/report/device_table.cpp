#include "report/device_table.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "collect/device_utilization.h"
#include "core/split.h"
#include "core/text_trim.h"

namespace trainwatch::report {
namespace {

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> fields;
  ForEachPiece(line, ',',
               [&](std::string_view field) { fields.push_back(Trim(field, kWhiteSpace)); });
  return fields;
}

struct Column {
  std::string key;   // "utilization.gpu"
  std::string unit;  // "%", from "utilization.gpu [%]"; empty when the header gives none
};

Column ParseHeader(std::string_view field) {
  Column column;
  const std::size_t bracket = field.find(" [");
  column.key = std::string(Trim(field.substr(0, bracket), kWhiteSpace));
  std::transform(column.key.begin(), column.key.end(), column.key.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (bracket != std::string_view::npos && field.back() == ']') {
    column.unit = std::string(field.substr(bracket + 2, field.size() - bracket - 3));
  }
  return column;
}

bool IsBareNumber(std::string_view value) {
  return !value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-';
  });
}

// The value with its unit: "98 %" from "98" under "[%]", "98 %" as given.
std::string WithUnit(std::string_view value, const std::string& unit) {
  if (value.empty() || unit.empty() || !IsBareNumber(value)) {
    return std::string(value);
  }
  return std::string(value) + " " + unit;
}

}  // namespace

std::vector<DeviceRow> ParseSmiCsv(std::string_view tool, std::string_view text) {
  std::vector<DeviceRow> rows;
  std::vector<Column> header;
  ForEachPiece(text, '\n', [&](std::string_view line) {
    line = Trim(line, kWhiteSpace);
    if (line.empty()) {
      return;
    }
    const std::vector<std::string_view> fields = Fields(line);
    if (header.empty()) {
      for (std::string_view field : fields) {
        header.push_back(ParseHeader(field));
      }
      return;
    }
    if (fields.size() != header.size()) {
      return;
    }
    std::map<std::string, std::pair<std::string_view, const std::string*>> by_key;
    for (std::size_t i = 0; i < fields.size(); ++i) {
      by_key[header[i].key] = {fields[i], &header[i].unit};
    }
    auto value = [&](std::initializer_list<const char*> keys) -> std::string {
      for (const char* key : keys) {
        if (const auto it = by_key.find(key); it != by_key.end()) {
          return WithUnit(it->second.first, *it->second.second);
        }
      }
      return {};
    };
    DeviceRow row;
    row.tool = std::string(tool);
    row.index = value({"index", "module_id", "minor_number"});
    row.name = value({"name"});
    row.bus_id = value({"bus_id", "pci.bus_id"});
    row.utilization = value({"utilization.aip", "utilization.gpu"});
    row.temperature = value({"temperature.aip", "temperature.gpu"});
    row.power = value({"power.draw"});
    row.errors =
        value({"ecc.errors.uncorrected.volatile.total", "ecc.errors.uncorrected.aggregate.total"});
    const std::string used = value({"memory.used"});
    const std::string total = value({"memory.total"});
    if (!used.empty() || !total.empty()) {
      row.memory = (used.empty() ? "?" : used) + " / " + (total.empty() ? "?" : total);
    }
    if (row.index.empty() && row.name.empty() && row.utilization.empty()) {
      return;  // not a device query's output after all
    }
    rows.push_back(std::move(row));
  });
  return rows;
}

std::vector<DeviceRow> ParseNpuSmiRows(std::string_view text) {
  std::vector<DeviceRow> rows;
  for (const auto& [device, percent] : collect::ParseNpuSmiInfo(text)) {
    DeviceRow row;
    row.tool = "npu-smi";
    row.index = std::to_string(device);
    row.utilization = std::to_string(std::lround(percent)) + " % (AICore)";
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace trainwatch::report
