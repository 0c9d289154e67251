// The in-process collectors of a capture, in the bundle's order: the incident and its firing
// lines, the environment of the job's processes (live and exited, redacted), processes,
// Python packages, system facts, disk usage, log tails, $HABANA_LOGS and extra paths.
// Blocking (they read /proc and files): the Capturer runs them on the thread pool.
#pragma once

#include <string>

#include "capture/bundle_contents.h"
#include "capture/capturer.h"
#include "collect/redactor.h"
#include "config/capture_config.h"

namespace trainwatch::capture {

// `bundles_dir` joins the watched folders for disk usage; redactions are counted into
// `redactions`.
CollectorResults RunBuiltinCollectors(const CaptureRequest& request,
                                      const config::CaptureConfig& config,
                                      const std::string& bundles_dir,
                                      const collect::Redactor& redactor,
                                      collect::RedactionCounts& redactions,
                                      const std::string& proc_root);

}  // namespace trainwatch::capture
