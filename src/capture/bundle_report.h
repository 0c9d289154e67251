// The report.html of a bundle being written (report/report_html.h): from its manifest, and the
// device table read from the outputs of its device queries (hl-smi's and nvidia-smi's CSV,
// npu-smi's table), redacted like the files they are. Pure; any thread (the bundle writer's).
#pragma once

#include <string>
#include <vector>

#include "collect/artifact.h"
#include "collect/redactor.h"

namespace trainwatch::capture {

// Empty when the manifest is not JSON (a minimal built-in one): no report then.
std::string BundleReport(const std::string& manifest,
                         const std::vector<collect::Artifact>& artifacts,
                         const collect::Redactor* redactor);

}  // namespace trainwatch::capture
