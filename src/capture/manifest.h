// What a bundle says about itself: manifest.json (its first member: the incident, each
// collector's status, every file, the redaction counts) and incident/firing-lines.txt (the
// firing lines with their context, as an engineer reads them first). Pure functions; any
// thread (the bundle writer calls ManifestJson on the thread pool).
#pragma once

#include <string>
#include <vector>

#include "bundle/bundle_writer.h"
#include "capture/capture_types.h"
#include "collect/artifact.h"
#include "collect/redactor.h"

namespace trainwatch::capture {

// The manifest's fields, from the capture's results (schema_version 1); `ranks_json`, when
// not empty, is its "ranks" (capture/rank_report.h: RanksJson); `early_why`, when not empty,
// its "early": why this is an early bundle that a complete one will replace.
std::string ManifestJson(const CaptureRequest& request,
                         const std::vector<collect::CollectorResult>& collectors,
                         const bundle::BundleSummary& summary,
                         const collect::RedactionCounts& redactions, bool reduced,
                         const std::string& reduced_why, const std::string& host,
                         const std::string& container, WallTime created,
                         const std::string& ranks_json = {}, const std::string& early_why = {});

std::string FiringLines(const detect::Incident& incident);

}  // namespace trainwatch::capture
