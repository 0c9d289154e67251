// The bundle writer's two passes over the artifacts. Pass 1 measures every member (its exact
// size after redaction, its redactions, what could not be read) so the manifest, written
// first, tells the truth; pass 2 writes exactly what pass 1 planned, and records, without
// failing the bundle, a file that changed, vanished or was rotated in between. Separate from
// WriteBundle's sequencing (partial file, fsync, rename): this file decides what each member
// holds, that one only where it goes. Pass 1 uses threads of its own; pass 2 runs on one.
#pragma once

#include <sys/types.h>

#include <ctime>
#include <string>
#include <vector>

#include "bundle/archive_writer.h"
#include "bundle/bundle_writer.h"
#include "bundle/source_file.h"

namespace trainwatch::bundle {

// What pass 1 decided for one artifact; pass 2 writes exactly that.
struct ArtifactPlan {
  bool member = false;   // false: nothing to write (unreadable, unsafe path)
  std::string redacted;  // a content artifact after redaction, when redaction changed it
  bool use_redacted = false;
  dev_t dev = 0;  // the file pass 1 measured, to notice a rotation in between
  ino_t ino = 0;
  // Pass 1 found nothing to redact in the file as it was then (size and mtime): pass 2 copies
  // it without the redactor while it is still so (a finished job's logs), else redacts again.
  bool clean = false;
  off_t size = 0;
  struct timespec mtime {};
  struct timespec ctime {};
};

// Pass 1 over every artifact of `request`, on up to `workers` threads (fewer when fewer files
// need redacting; fewer still when no thread can be had). Fills one summary and one plan per
// artifact, in order, and the summary's redactions and input bytes. `now`: what a file's last
// change is judged against (ArtifactPlan::clean).
void MeasureArtifacts(const BundleRequest& request, int workers, std::time_t now,
                      BundleSummary& summary, std::vector<ArtifactPlan>& plans);

// Pass 2 for one artifact: its header and exactly out.bytes of data. A file that changed since
// pass 1 adds to out.problem and is cut or padded. False only when the archive refused data
// (the output failed). REQUIRES: plan.member.
bool WriteArtifact(ArchiveWriter& archive, const BundleRequest& request,
                   const collect::Artifact& artifact, const ArtifactPlan& plan,
                   ArtifactSummary& out, std::time_t now, StreamBuffers& buffers);

}  // namespace trainwatch::bundle
