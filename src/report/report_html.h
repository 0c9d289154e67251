// report.html: the page a person looks at, one per bundle, self-contained (inline style and
// SVG, no script, no font or image to fetch), opened from the untarred bundle, where its links
// reach every file beside it. From the top: the verdict and action with why and how often this
// failure came back; the timeline (report/timeline_svg.h); the ranks — where each group
// stands, the suspects and why, each rank's evidence; the firing lines in their context; the
// device table; every collector's status; every file. Readable as plain text too (`w3m
// -dump`): headings, lists and tables, nothing drawn only. Made from the bundle's manifest
// (capture/manifest.h), so it tells what the manifest tells. Pure; any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/device_table.h"

namespace trainwatch::report {

std::string ReportHtml(const nlohmann::ordered_json& manifest,
                       const std::vector<DeviceRow>& devices);

}  // namespace trainwatch::report
