// How the bundle writer reads an artifact's source file (a log's tail, a device dump): opened
// without following a symlink or blocking on a FIFO, read by bounded chunks, redacted on line
// boundaries. Separate from the archive and from the two passes so that what a planted link or
// a log that shrinks can do to the reader is judged in one place, and both passes read alike.
// Stateless; any thread (the first pass calls it from several).
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "collect/redactor.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace trainwatch::bundle {

// Both passes open a source file this way: a symlink planted where a log was is never followed
// (it could point at /etc/shadow), and a FIFO can never block the writer. The Error is the
// artifact's `problem` as the manifest shows it: "vanished: ...", "... is a symlink ...".
struct SourceFile {
  UniqueFd fd;
  struct stat st {};
};
Result<SourceFile> OpenSource(const std::string& path);

// Streams `length` bytes of `fd` from `offset` to `sink`, redacted when a redactor is given.
// Redacted chunks end at a line end (the partial last line is carried into the next chunk), so
// a secret is never split across two RedactText calls; only a line longer than a chunk is cut.
// Chunking depends on the bytes alone, so both passes redact identically. `stats.read` counts
// the bytes read, before redaction. Returns 0, the errno of a failed read, or -1 when the sink
// returned false.
struct StreamStats {
  std::uint64_t read = 0;
};
// The chunk and the carried line, kept by the caller from one file to the next: a fresh
// megabyte per file cost page faults and zeroing for every file of a 200 MB $HABANA_LOGS.
// One per thread.
struct StreamBuffers {
  std::string text;
  std::string carry;
};
int StreamRange(int fd, std::uint64_t offset, std::uint64_t length,
                const collect::Redactor* redactor, collect::RedactionCounts& counts,
                StreamStats& stats, StreamBuffers& buffers,
                const std::function<bool(std::string_view)>& sink);

// Whether the file starts like a gzip, xz or bzip2 stream: every byte after the header is
// entropy-coded, so the redactor could not read a secret inside one; such a file is bundled
// as it is, not scanned. Not zip, lz4 or zstd: their stored entries, literal runs and raw
// blocks keep text as it was (a checkpoint's pickled config), and those are scanned.
bool LooksCompressed(int fd);

}  // namespace trainwatch::bundle
