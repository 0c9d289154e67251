// WriteBundle: turns one incident's artifacts into a `.tar.zst` bundle (pax tar, readable by
// plain `tar --zstd -xf`), manifest.json first. Files are streamed and redacted in 1 MiB
// chunks, so memory is bounded whatever the logs weigh (~60-75 MiB RSS at the peak for 200 MB,
// most of it zstd's worker buffers). The bundle appears under its final name only once
// complete and synced. Blocking: the daemon calls it on a worker thread; no shared state, so
// several may run at once on different bundles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "collect/artifact.h"
#include "collect/redactor.h"
#include "core/result.h"

namespace trainwatch::bundle {

struct ArtifactSummary {
  std::string path;         // inside the bundle
  std::uint64_t bytes = 0;  // as written (after redaction)
  bool truncated = false;   // fewer bytes than asked for (a log that shrank meanwhile)
  std::string problem;      // why it is missing or short: vanished, a symlink, changed, ...
};

struct BundleSummary {
  std::vector<ArtifactSummary> artifacts;  // one per request artifact, same order
  collect::RedactionCounts redactions;
  std::uint64_t input_bytes = 0;  // read from content and files, before redaction
  // The first pass: every file to redact read and scanned once (pass 2 scans again only what
  // had something to redact or changed since), the redaction's cost.
  double first_pass_seconds = 0;
};

struct BundleRequest {
  std::string dir;        // the bundles directory (exists)
  std::string file_name;  // final name: "20261121T120000Z_host_rule.id_incidentid.tar.zst"
  std::vector<collect::Artifact> artifacts;
  const collect::Redactor* redactor = nullptr;  // applied to artifacts with redact == true
  // manifest.json's text, made from what will be written. Called once, after a first pass that
  // measures every artifact and counts redactions, so the manifest is the archive's FIRST member
  // and still tells the truth about everything after it. Empty: a minimal built-in manifest.
  std::function<std::string(const BundleSummary&)> make_manifest;
  // report.html's text, made from the manifest's; the archive's second member. Empty function
  // or text: no report.
  std::function<std::string(const std::string& manifest)> make_report;
  int level = 3;  // zstd level
  // zstd worker threads, 0 = one per core (1 where libarchive cannot); also the threads that
  // measure (read and redact) files in the first pass.
  int threads = 0;
  // When the bundle is written: its members' mtime, and what "changed a moment ago" is
  // judged against in the first pass. 0: the clock (tests set it).
  std::time_t now = 0;
};

struct BundleResult {
  std::string path;         // <dir>/<file_name>
  std::uint64_t bytes = 0;  // of the compressed bundle
  // The first pass's summary (what the manifest says), plus problems met in the second pass (a
  // file that changed in between: its member was padded or cut to the announced size).
  BundleSummary summary;
  double seconds = 0;
};

// Writes <dir>/.<file_name>.partial (mode 0600), fsyncs it, renames it to <dir>/<file_name>
// and fsyncs the directory: no reader ever sees half a bundle, and a crash leaves only a hidden
// .partial. Artifacts that cannot be read (vanished, a symlink, not a regular file, an unsafe
// path) get no member and a `problem`; they never fail the bundle. On a failure to write (a
// full disk) the partial file is removed and the Error names the file, the step and errno.
Result<BundleResult> WriteBundle(const BundleRequest& request);

// Removes leftover .*.partial files in `dir` (a crash mid-write); returns how many.
// REQUIRES: no WriteBundle is running on `dir` (its partial file would go, and it would fail).
// Call it at startup, or from the one thread that writes the bundles, before a write.
std::size_t RemovePartialBundles(const std::string& dir);

}  // namespace trainwatch::bundle
