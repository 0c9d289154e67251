// The bundle writer's two passes (see artifact_passes.h): measuring every artifact, then writing
// each as measured, with what changed in between recorded in its summary.
#include "bundle/artifact_passes.h"

#include <algorithm>
#include <atomic>
#include <string_view>
#include <system_error>
#include <thread>

#include "bundle/errno_text.h"
#include "bundle/source_file.h"

namespace trainwatch::bundle {
namespace {

// How long ago a file must have last changed for pass 1's "nothing to redact" to stand in
// pass 2 (file times have the file system's granularity, up to a second or two).
constexpr std::time_t kSettledSeconds = 2;

void AddProblem(ArtifactSummary& artifact, const std::string& problem) {
  artifact.problem += artifact.problem.empty() ? problem : "; " + problem;
}

// A member path that `tar -xf` would refuse or that would escape the extraction directory.
bool SafeMemberPath(std::string_view path) {
  if (path.empty() || path.front() == '/' || path == "manifest.json") {
    return false;
  }
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") {
      return false;
    }
    start = end + 1;
  }
  return true;
}

const collect::Redactor* RedactorFor(const BundleRequest& request,
                                     const collect::Artifact& artifact) {
  return artifact.redact ? request.redactor : nullptr;
}

// Pass 1 for one artifact: the exact size of its member, its redactions, and what could not be
// read. Returns the bytes it read, before redaction.
std::uint64_t MeasureOne(const collect::Artifact& artifact, const collect::Redactor* redactor,
                         std::time_t now, ArtifactSummary& out, ArtifactPlan& plan,
                         collect::RedactionCounts& counts, StreamBuffers& buffers) {
  out.path = artifact.path;
  if (!SafeMemberPath(artifact.path)) {
    out.problem = "refused: not a safe relative path inside the bundle";
    return 0;
  }
  if (artifact.source_file.empty()) {
    plan.member = true;
    out.bytes = artifact.content.size();
    if (redactor != nullptr) {
      std::string copy = artifact.content;
      redactor->RedactText(copy, counts);
      if (copy != artifact.content) {
        out.bytes = copy.size();
        plan.redacted = std::move(copy);
        plan.use_redacted = true;
      }
    }
    return artifact.content.size();
  }
  Result<SourceFile> file = OpenSource(artifact.source_file);
  if (!file.ok()) {
    out.problem = file.error().message;
    return 0;
  }
  plan.member = true;
  plan.dev = file->st.st_dev;
  plan.ino = file->st.st_ino;
  const auto size = static_cast<std::uint64_t>(file->st.st_size);
  std::uint64_t available = size > artifact.offset ? size - artifact.offset : 0;
  available = std::min(available, artifact.length);
  int error = 0;
  if (redactor != nullptr && artifact.offset == 0 && LooksCompressed(file->fd.get())) {
    redactor = nullptr;  // nothing the redactor could read; bundled as it is
  }
  if (redactor == nullptr) {
    // Unredacted: the size is known without reading a byte.
    out.bytes = available;
    plan.clean = true;
  } else {
    StreamStats stats;
    collect::RedactionCounts found;
    error = StreamRange(file->fd.get(), artifact.offset, artifact.length, redactor, found, stats,
                        buffers, [&out](std::string_view chunk) {
                          out.bytes += chunk.size();
                          return true;
                        });
    available = stats.read;
    // A file changed within the last seconds may change again within the same clock tick,
    // which its times would not tell: only an older one counts as clean. ctime too: `touch
    // -r` and `cp -p` put an mtime back, nothing puts a ctime back.
    const bool settled =
        now - std::max(file->st.st_mtim.tv_sec, file->st.st_ctim.tv_sec) > kSettledSeconds;
    plan.clean = error == 0 && found.by_rule.empty() && out.bytes == available && settled;
    counts.Merge(found);
  }
  plan.size = file->st.st_size;
  plan.mtime = file->st.st_mtim;
  plan.ctime = file->st.st_ctim;
  if (error != 0) {
    AddProblem(out,
               "read failed after " + std::to_string(available) + " bytes: " + ErrnoText(error));
  }
  if (available < artifact.length) {
    out.truncated = true;
    if (error == 0) {
      AddProblem(out, "file ends " + std::to_string(artifact.length - available) +
                          " bytes short of the range asked for");
    }
  }
  return available;
}

}  // namespace

// Redacting files is the one costly part (the redactor runs its regexes over any chunk its
// prefilter flags), and pass 2 redacts them again while zstd's workers compress, so pass 1
// spreads files over `workers` threads instead of leaving cores idle.
void MeasureArtifacts(const BundleRequest& request, int workers, std::time_t now,
                      BundleSummary& summary, std::vector<ArtifactPlan>& plans) {
  const std::size_t n = request.artifacts.size();
  summary.artifacts.resize(n);
  plans.resize(n);
  std::size_t files_to_redact = 0;
  for (const collect::Artifact& artifact : request.artifacts) {
    files_to_redact += !artifact.source_file.empty() && RedactorFor(request, artifact) != nullptr;
  }
  workers = static_cast<int>(std::clamp<std::size_t>(files_to_redact, 1, std::max(workers, 1)));
  std::vector<collect::RedactionCounts> counts(static_cast<std::size_t>(workers));
  std::vector<std::uint64_t> input(static_cast<std::size_t>(workers), 0);
  std::atomic<std::size_t> next{0};
  auto work = [&](std::size_t worker) {
    StreamBuffers buffers;
    for (std::size_t i; (i = next++) < n;) {
      const collect::Artifact& artifact = request.artifacts[i];
      input[worker] += MeasureOne(artifact, RedactorFor(request, artifact), now,
                                  summary.artifacts[i], plans[i], counts[worker], buffers);
    }
  };
  std::vector<std::thread> helpers;
  try {
    for (int w = 1; w < workers; ++w) {
      helpers.emplace_back(work, static_cast<std::size_t>(w));
    }
  } catch (const std::system_error&) {
    // No thread to be had (a process at its limit): the ones started and this one do it all.
  }
  work(0);
  for (std::thread& helper : helpers) {
    helper.join();
  }
  for (std::size_t w = 0; w < counts.size(); ++w) {
    summary.redactions.Merge(counts[w]);
    summary.input_bytes += input[w];
  }
}

bool WriteArtifact(ArchiveWriter& archive, const BundleRequest& request,
                   const collect::Artifact& artifact, const ArtifactPlan& plan,
                   ArtifactSummary& out, std::time_t now, StreamBuffers& buffers) {
  std::optional<ArchiveMember> member = archive.AddMember(artifact.path, out.bytes, now);
  if (!member) {
    return false;
  }
  if (artifact.source_file.empty()) {
    return member->Write(plan.use_redacted ? plan.redacted : artifact.content);
  }
  Result<SourceFile> file = OpenSource(artifact.source_file);
  if (!file.ok()) {
    AddProblem(out, "changed while bundling (" + file.error().message + "), padded");
    return member->Pad();
  }
  if (file->st.st_dev != plan.dev || file->st.st_ino != plan.ino) {
    AddProblem(out, "replaced while bundling (rotated?), padded");
    return member->Pad();
  }
  // A file pass 1 found clean and that has not changed since is copied as it is: the
  // redactor's second pass over a finished job's logs was a fifth of a bundle's time.
  auto same = [](const struct timespec& a, const struct timespec& b) {
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
  };
  const bool unchanged = file->st.st_size == plan.size && same(file->st.st_mtim, plan.mtime) &&
                         same(file->st.st_ctim, plan.ctime);
  // A changed file is redacted, whatever pass 1 thought of it (compressed or clean).
  const collect::Redactor* redactor =
      plan.clean && unchanged ? nullptr : RedactorFor(request, artifact);
  collect::RedactionCounts ignored;  // pass 1 counted them
  StreamStats stats;
  bool output_failed = false;
  const int error = StreamRange(file->fd.get(), artifact.offset, artifact.length, redactor, ignored,
                                stats, buffers, [&](std::string_view chunk) {
                                  output_failed = !member->Write(chunk);
                                  return !output_failed;
                                });
  if (output_failed) {
    return false;
  }
  if (member->cut()) {
    AddProblem(out, "changed while bundling: grew, cut to the announced " +
                        std::to_string(out.bytes) + " bytes");
  } else if (error != 0 || member->written() != out.bytes) {
    AddProblem(out, "changed while bundling: " + std::to_string(member->written()) + " of " +
                        std::to_string(out.bytes) + " bytes" +
                        (error != 0 ? " (" + ErrnoText(error) + ")" : "") +
                        ", padded with newlines");
  }
  return member->Pad();
}

}  // namespace trainwatch::bundle
