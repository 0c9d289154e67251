#include "capture/bundle_report.h"

#include <nlohmann/json.hpp>

#include "report/device_table.h"
#include "report/report_html.h"

namespace trainwatch::capture {

std::string BundleReport(const std::string& manifest,
                         const std::vector<collect::Artifact>& artifacts,
                         const collect::Redactor* redactor) {
  const auto parsed = nlohmann::ordered_json::parse(manifest, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) {
    return {};
  }
  std::vector<report::DeviceRow> devices;
  for (const collect::Artifact& artifact : artifacts) {
    // Command outputs are held in memory; a file on disk is no device query's.
    if (!artifact.source_file.empty()) {
      continue;
    }
    const bool hl_smi = artifact.path == "device/hl-smi.csv";
    const bool nvidia_smi = artifact.path == "device/nvidia-smi.csv";
    const bool npu_smi = artifact.path == "device/npu-smi.txt";
    if (!hl_smi && !nvidia_smi && !npu_smi) {
      continue;
    }
    std::string text = artifact.content;
    if (redactor != nullptr && artifact.redact) {
      collect::RedactionCounts ignored;  // the manifest counts what the file itself held
      redactor->RedactText(text, ignored);
    }
    std::vector<report::DeviceRow> rows =
        npu_smi ? report::ParseNpuSmiRows(text)
                : report::ParseSmiCsv(hl_smi ? "hl-smi" : "nvidia-smi", text);
    devices.insert(devices.end(), std::make_move_iterator(rows.begin()),
                   std::make_move_iterator(rows.end()));
  }
  return report::ReportHtml(parsed, devices);
}

}  // namespace trainwatch::capture
