#include "bundle/bundle_writer.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <system_error>
#include <thread>

#include "core/stopwatch.h"
#include "core/unique_fd.h"

namespace trainwatch::bundle {
namespace {

// Reads and redactions go by chunks of this size: a bundle of any size costs a few in memory.
// Bigger buys nothing (zstd and the redactor's prefilter are at full speed already) and costs on
// secret-dense logs, where the redactor runs a pattern's regex over every chunk it flags.
constexpr std::size_t kChunk = std::size_t{1} << 20;

std::string ErrnoText(int error) {
  return std::error_code(error, std::generic_category()).message();
}

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

// Both passes open a source file this way: a symlink planted where a log was is never followed
// (it could point at /etc/shadow), and a FIFO can never block the writer.
struct SourceFile {
  UniqueFd fd;
  struct stat st {};
};
Result<SourceFile> OpenSource(const std::string& path) {
  SourceFile file;
  file.fd = UniqueFd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (file.fd.get() < 0) {
    const int error = errno;
    if (error == ELOOP) {
      return Error{path + " is a symlink (not followed)"};
    }
    return Error{(error == ENOENT ? "vanished: " : "cannot open: ") + path + ": " +
                 ErrnoText(error)};
  }
  if (::fstat(file.fd.get(), &file.st) != 0) {
    return Error{"cannot stat " + path + ": " + ErrnoText(errno)};
  }
  if (!S_ISREG(file.st.st_mode)) {
    return Error{path + " is not a regular file"};
  }
  return file;
}

// A private key block is the one secret that spans lines. A BEGIN line near the end of a chunk
// with no END after it moves, with what follows, to the next chunk; a key is a few KiB.
std::size_t KeepKeyBlockWhole(std::string_view text, std::size_t cut) {
  constexpr std::size_t kWindow = std::size_t{16} << 10;
  const std::size_t from = cut > kWindow ? cut - kWindow : 0;
  const std::string_view tail = text.substr(from, cut - from);
  const std::size_t begin = tail.rfind("-----BEGIN ");
  if (begin == std::string_view::npos || tail.find("-----END ", begin) != std::string_view::npos) {
    return cut;
  }
  const std::size_t line = text.rfind('\n', from + begin);
  return line == std::string_view::npos ? cut : line + 1;  // never an empty chunk
}

// Streams `length` bytes of `fd` from `offset` to sink(std::string_view), redacted when a
// redactor is given. Redacted chunks end at a line end (the partial last line is carried into
// the next chunk), so a secret is never split across two RedactText calls; only a line longer
// than a chunk is cut. Chunking depends on the bytes alone, so both passes redact identically.
// Returns 0, the errno of a failed read, or -1 when the sink refused.
struct StreamStats {
  std::uint64_t read = 0;
};
template <typename Sink>
int StreamRange(int fd, std::uint64_t offset, std::uint64_t length,
                const collect::Redactor* redactor, collect::RedactionCounts& counts,
                StreamStats& stats, Sink&& sink) {
  std::string text;   // the carried partial line, then the bytes just read
  std::string carry;  // swapped with `text` each round, so neither is reallocated
  std::uint64_t pos = offset;
  const std::uint64_t end = length > UINT64_MAX - offset ? UINT64_MAX : offset + length;
  bool done = false;
  int error = 0;
  while (!done) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, end - pos));
    const std::size_t old = text.size();
    text.resize(old + want);
    std::size_t got = 0;
    while (got < want) {
      const ssize_t n =
          ::pread(fd, text.data() + old + got, want - got, static_cast<off_t>(pos + got));
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0) {
        error = errno;
      }
      if (n <= 0) {
        break;
      }
      got += static_cast<std::size_t>(n);
    }
    text.resize(old + got);
    pos += got;
    stats.read += got;
    done = got < want || pos == end;
    std::size_t cut = text.size();
    if (!done && redactor != nullptr) {
      const std::size_t newline = text.rfind('\n');
      if (newline != std::string::npos) {
        cut = KeepKeyBlockWhole(text, newline + 1);
      }
    }
    carry.assign(text, cut, std::string::npos);
    text.resize(cut);
    if (redactor != nullptr && !text.empty()) {
      redactor->RedactText(text, counts);
    }
    if (!text.empty() && !sink(std::string_view(text))) {
      return -1;
    }
    text.swap(carry);
  }
  return error;
}

// What the first pass decided for one artifact; the second pass writes exactly that.
struct Plan {
  bool member = false;   // false: nothing to write (unreadable, unsafe path)
  std::string redacted;  // a content artifact after redaction, when redaction changed it
  bool use_redacted = false;
  dev_t dev = 0;  // the file the first pass measured, to notice a rotation in between
  ino_t ino = 0;
};

const collect::Redactor* RedactorFor(const BundleRequest& request,
                                     const collect::Artifact& artifact) {
  return artifact.redact ? request.redactor : nullptr;
}

// Pass 1 for one artifact: the exact size of its member, its redactions, and what could not be
// read. Returns the bytes it read, before redaction.
std::uint64_t MeasureOne(const collect::Artifact& artifact, const collect::Redactor* redactor,
                         ArtifactSummary& out, Plan& plan, collect::RedactionCounts& counts) {
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
  if (redactor == nullptr) {
    // Unredacted: the size is known without reading a byte.
    out.bytes = available;
  } else {
    StreamStats stats;
    error = StreamRange(file->fd.get(), artifact.offset, artifact.length, redactor, counts, stats,
                        [&out](std::string_view chunk) {
                          out.bytes += chunk.size();
                          return true;
                        });
    available = stats.read;
  }
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

// Pass 1 over every artifact. Redacting files is the one costly part (the redactor runs its
// regexes over any chunk its prefilter flags), and pass 2 redacts them again while zstd's
// workers compress, so pass 1 spreads files over `workers` threads instead of leaving cores idle.
void Measure(const BundleRequest& request, int workers, BundleSummary& summary,
             std::vector<Plan>& plans) {
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
    for (std::size_t i; (i = next++) < n;) {
      const collect::Artifact& artifact = request.artifacts[i];
      input[worker] += MeasureOne(artifact, RedactorFor(request, artifact), summary.artifacts[i],
                                  plans[i], counts[worker]);
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

// The archive's client: writes to the partial file and keeps errno, which libarchive's own fd
// writer reduces to "Write error".
struct Output {
  int fd = -1;
  std::uint64_t bytes = 0;
  int error = 0;
};
la_ssize_t WriteToFile(struct archive* /*archive*/, void* data, const void* buffer,
                       std::size_t length) {
  auto* out = static_cast<Output*>(data);
  const char* p = static_cast<const char*>(buffer);
  std::size_t left = length;
  while (left > 0) {
    const ssize_t n = ::write(out->fd, p, left);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      out->error = n < 0 ? errno : ENOSPC;
      return -1;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  out->bytes += length;
  return static_cast<la_ssize_t>(length);
}

struct ArchiveFree {
  void operator()(struct archive* a) const { archive_write_free(a); }
};
using ArchivePtr = std::unique_ptr<struct archive, ArchiveFree>;
struct EntryFree {
  void operator()(struct archive_entry* e) const { archive_entry_free(e); }
};

// Pass 2's view of one member: writes at most the announced size, and pads a short one with
// newlines, so a file that changed between the passes can never corrupt the archive.
class Member {
 public:
  Member(struct archive* a, std::uint64_t size) : archive_(a), size_(size) {}
  bool Write(std::string_view data) {
    const std::uint64_t room = size_ - written_;
    cut_ = cut_ || data.size() > room;
    data = data.substr(0, static_cast<std::size_t>(std::min<std::uint64_t>(room, data.size())));
    while (!data.empty()) {
      const la_ssize_t n = archive_write_data(archive_, data.data(), data.size());
      if (n <= 0) {
        return false;
      }
      data.remove_prefix(static_cast<std::size_t>(n));
      written_ += static_cast<std::uint64_t>(n);
    }
    return true;
  }
  // Whether it was handed more than its announced size (the file grew between the passes).
  bool cut() const { return cut_; }
  std::uint64_t written() const { return written_; }
  bool Pad() {
    if (written_ == size_) {
      return true;
    }
    const std::string newlines(static_cast<std::size_t>(std::min<std::uint64_t>(size_, kChunk)),
                               '\n');
    while (written_ < size_) {
      if (!Write(newlines)) {
        return false;
      }
    }
    return true;
  }

 private:
  struct archive* archive_;
  std::uint64_t size_;
  std::uint64_t written_ = 0;
  bool cut_ = false;
};

// Pass 2 for one artifact. Returns false when the archive refused data (the output failed).
bool WriteMember(struct archive* a, const BundleRequest& request, const collect::Artifact& artifact,
                 const Plan& plan, ArtifactSummary& out, std::time_t now) {
  std::unique_ptr<struct archive_entry, EntryFree> entry(archive_entry_new());
  archive_entry_set_pathname_utf8(entry.get(), artifact.path.c_str());
  archive_entry_set_filetype(entry.get(), AE_IFREG);
  archive_entry_set_perm(entry.get(), 0600);
  archive_entry_set_size(entry.get(), static_cast<la_int64_t>(out.bytes));
  archive_entry_set_mtime(entry.get(), now, 0);
  archive_entry_set_uid(entry.get(), ::getuid());
  archive_entry_set_gid(entry.get(), ::getgid());
  if (archive_write_header(a, entry.get()) < ARCHIVE_WARN) {
    return false;
  }
  Member member(a, out.bytes);
  if (artifact.source_file.empty()) {
    return member.Write(plan.use_redacted ? plan.redacted : artifact.content);
  }
  Result<SourceFile> file = OpenSource(artifact.source_file);
  if (!file.ok()) {
    AddProblem(out, "changed while bundling (" + file.error().message + "), padded");
    return member.Pad();
  }
  if (file->st.st_dev != plan.dev || file->st.st_ino != plan.ino) {
    AddProblem(out, "replaced while bundling (rotated?), padded");
    return member.Pad();
  }
  collect::RedactionCounts ignored;  // the first pass counted them
  StreamStats stats;
  bool output_failed = false;
  const int error =
      StreamRange(file->fd.get(), artifact.offset, artifact.length, RedactorFor(request, artifact),
                  ignored, stats, [&](std::string_view chunk) {
                    output_failed = !member.Write(chunk);
                    return !output_failed;
                  });
  if (output_failed) {
    return false;
  }
  if (member.cut()) {
    AddProblem(out, "changed while bundling: grew, cut to the announced " +
                        std::to_string(out.bytes) + " bytes");
  } else if (error != 0 || member.written() != out.bytes) {
    AddProblem(out, "changed while bundling: " + std::to_string(member.written()) + " of " +
                        std::to_string(out.bytes) + " bytes" +
                        (error != 0 ? " (" + ErrnoText(error) + ")" : "") +
                        ", padded with newlines");
  }
  return member.Pad();
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
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const int threads = request.threads > 0 ? request.threads : static_cast<int>(cores);
  std::vector<Plan> plans;
  Measure(request, threads, result.summary, plans);
  const std::string manifest = request.make_manifest ? request.make_manifest(result.summary)
                                                     : DefaultManifest(result.summary);

  Output output;
  UniqueFd fd(::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.get() < 0) {
    const int error = errno;
    return Error{"bundle " + final_path + ": cannot create " + partial + ": " + ErrnoText(error)};
  }
  output.fd = fd.get();
  ArchivePtr archive(archive_write_new());
  // Every failure from here on removes the partial file: a full disk must not keep half a bundle.
  auto fail = [&](const std::string& step) -> Error {
    std::string why = output.error != 0 ? ErrnoText(output.error)
                      : archive_error_string(archive.get()) != nullptr
                          ? archive_error_string(archive.get())
                          : ErrnoText(errno);
    archive.reset();
    ::unlink(partial.c_str());
    return Error{"bundle " + final_path + ": " + step + ": " + why};
  };

  struct archive* a = archive.get();
  if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
      archive_write_add_filter_zstd(a) != ARCHIVE_OK ||
      archive_write_set_filter_option(a, "zstd", "compression-level",
                                      std::to_string(request.level).c_str()) != ARCHIVE_OK) {
    return fail("setting up zstd level " + std::to_string(request.level));
  }
  if (threads > 1) {
    // libarchive 3.6+ built with libzstd knows "threads"; elsewhere this fails and we use one.
    archive_write_set_filter_option(a, "zstd", "threads", std::to_string(threads).c_str());
  }
  // No blocking: the compressed stream goes to the file as zstd emits it, with no zero padding
  // after the last frame.
  archive_write_set_bytes_per_block(a, 0);
  if (archive_write_open2(a, &output, nullptr, WriteToFile, nullptr, nullptr) != ARCHIVE_OK) {
    return fail("opening the archive");
  }

  const std::time_t now = std::time(nullptr);
  collect::Artifact manifest_artifact;
  manifest_artifact.path = "manifest.json";
  manifest_artifact.content = manifest;
  ArtifactSummary manifest_summary{"manifest.json", manifest.size(), false, ""};
  if (!WriteMember(a, request, manifest_artifact, Plan{}, manifest_summary, now)) {
    return fail("writing manifest.json");
  }
  for (std::size_t i = 0; i < request.artifacts.size(); ++i) {
    if (plans[i].member && !WriteMember(a, request, request.artifacts[i], plans[i],
                                        result.summary.artifacts[i], now)) {
      return fail("writing " + request.artifacts[i].path);
    }
  }
  if (archive_write_close(a) != ARCHIVE_OK) {
    return fail("finishing the archive");
  }
  if (::fsync(fd.get()) != 0) {
    output.error = errno;
    return fail("fsync");
  }
  if (::rename(partial.c_str(), final_path.c_str()) != 0) {
    output.error = errno;
    return fail("renaming " + partial);
  }
  // The bundle is complete and visible now; a failed directory fsync only leaves its name's
  // durability across a power cut uncertain, which is no reason to report it lost.
  UniqueFd dir(::open(request.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() >= 0) {
    ::fsync(dir.get());
  }
  result.bytes = output.bytes;
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
