// WriteBundle's sequencing (see bundle_writer.h): the partial file, the manifest first, then
// every member as pass 1 planned it, fsync, rename, the directory's fsync; and the cleanup of
// partial files a crash left. What each member holds is artifact_passes.h's business, how the
// archive is written archive_writer.h's.
#include "bundle/bundle_writer.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "bundle/archive_writer.h"
#include "bundle/artifact_passes.h"
#include "bundle/errno_text.h"
#include "core/stopwatch.h"
#include "core/unique_fd.h"
#include "core/usable_cores.h"

namespace trainwatch::bundle {
namespace {

std::string DefaultManifest(const BundleSummary& summary) {
  nlohmann::json artifacts = nlohmann::json::array();
  for (const ArtifactSummary& a : summary.artifacts) {
    artifacts.push_back(
        {{"path", a.path}, {"bytes", a.bytes}, {"truncated", a.truncated}, {"problem", a.problem}});
  }
  return nlohmann::json{{"artifacts", artifacts},
                        {"redactions", summary.redactions.by_rule},
                        {"input_bytes", summary.input_bytes}}
             .dump(2) +
         "\n";
}

}  // namespace

Result<BundleResult> WriteBundle(const BundleRequest& request) {
  const Stopwatch stopwatch;
  const std::string final_path = request.dir + "/" + request.file_name;
  if (request.file_name.empty() || request.file_name.front() == '.' ||
      request.file_name.find('/') != std::string::npos) {
    return Error{"bundle name '" + request.file_name + "' must be a plain, non-hidden file name"};
  }
  const std::string partial = request.dir + "/." + request.file_name + ".partial";

  BundleResult result;
  result.path = final_path;
  const int threads = request.threads > 0 ? request.threads : UsableCores();
  std::vector<ArtifactPlan> plans;
  const std::time_t now = request.now != 0 ? request.now : std::time(nullptr);
  const Stopwatch first_pass;
  MeasureArtifacts(request, threads, now, result.summary, plans);
  result.summary.first_pass_seconds = first_pass.Seconds();
  const std::string manifest = request.make_manifest ? request.make_manifest(result.summary)
                                                     : DefaultManifest(result.summary);

  UniqueFd fd(::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.get() < 0) {
    const int error = errno;
    return Error{"bundle " + final_path + ": cannot create " + partial + ": " + ErrnoText(error)};
  }
  std::optional<ArchiveWriter> archive(std::in_place, fd.get());
  // Every failure from here on removes the partial file: a full disk must not keep half a bundle.
  // The archive is freed first (freeing an open one flushes into the file), so nothing writes to
  // the partial file once its name is gone.
  auto fail = [&](const std::string& step, const std::string& why) -> Error {
    archive.reset();
    ::unlink(partial.c_str());
    return Error{"bundle " + final_path + ": " + step + ": " + why};
  };

  if (!archive->SetUp(request.level, threads)) {
    return fail("setting up zstd level " + std::to_string(request.level), archive->ErrorText());
  }
  if (!archive->Open()) {
    return fail("opening the archive", archive->ErrorText());
  }

  std::optional<ArchiveMember> manifest_member =
      archive->AddMember("manifest.json", manifest.size(), now);
  if (!manifest_member || !manifest_member->Write(manifest)) {
    return fail("writing manifest.json", archive->ErrorText());
  }
  if (const std::string report = request.make_report ? request.make_report(manifest) : "";
      !report.empty()) {
    std::optional<ArchiveMember> report_member =
        archive->AddMember("report.html", report.size(), now);
    if (!report_member || !report_member->Write(report)) {
      return fail("writing report.html", archive->ErrorText());
    }
  }
  StreamBuffers buffers;
  for (std::size_t i = 0; i < request.artifacts.size(); ++i) {
    if (plans[i].member && !WriteArtifact(*archive, request, request.artifacts[i], plans[i],
                                          result.summary.artifacts[i], now, buffers)) {
      return fail("writing " + request.artifacts[i].path, archive->ErrorText());
    }
  }
  if (!archive->Close()) {
    return fail("finishing the archive", archive->ErrorText());
  }
  if (::fsync(fd.get()) != 0) {
    const int error = errno;
    return fail("fsync", ErrnoText(error));
  }
  if (::rename(partial.c_str(), final_path.c_str()) != 0) {
    const int error = errno;
    return fail("renaming " + partial, ErrnoText(error));
  }
  // The bundle is complete and visible now; a failed directory fsync only leaves its name's
  // durability across a power cut uncertain, which is no reason to report it lost.
  UniqueFd dir(::open(request.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() >= 0) {
    ::fsync(dir.get());
  }
  result.bytes = archive->bytes();
  result.seconds = stopwatch.Seconds();
  return result;
}

std::size_t RemovePartialBundles(const std::string& dir) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
  if (d == nullptr) {
    return 0;
  }
  std::size_t removed = 0;
  constexpr std::string_view kSuffix = ".partial";
  while (const dirent* e = ::readdir(d.get())) {
    const std::string_view name = e->d_name;
    if (name.size() > kSuffix.size() + 1 && name.front() == '.' && name.ends_with(kSuffix) &&
        ::unlinkat(::dirfd(d.get()), e->d_name, 0) == 0) {
      ++removed;
    }
  }
  return removed;
}

}  // namespace trainwatch::bundle
