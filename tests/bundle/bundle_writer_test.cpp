#include "bundle/bundle_writer.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "bundle/bundle_reader.h"
#include "support/temp_dir.h"

namespace trainwatch::bundle {
namespace {

namespace fs = std::filesystem;
using collect::Artifact;
using testing::TempDir;

struct Member {
  std::string name;
  std::string data;
  mode_t perm = 0;
};

// Reads a bundle back with libarchive, as any consumer would.
std::vector<Member> ReadBundle(const std::string& path) {
  std::vector<Member> members;
  struct archive* a = archive_read_new();
  archive_read_support_filter_zstd(a);
  archive_read_support_format_tar(a);
  EXPECT_EQ(archive_read_open_filename(a, path.c_str(), 1 << 16), ARCHIVE_OK)
      << archive_error_string(a);
  struct archive_entry* entry = nullptr;
  int rc = ARCHIVE_OK;
  while ((rc = archive_read_next_header(a, &entry)) == ARCHIVE_OK) {
    Member& m = members.emplace_back();
    m.name = archive_entry_pathname(entry);
    m.perm = archive_entry_perm(entry);
    char buffer[1 << 16];
    la_ssize_t n = 0;
    while ((n = archive_read_data(a, buffer, sizeof buffer)) > 0) {
      m.data.append(buffer, static_cast<std::size_t>(n));
    }
    EXPECT_EQ(n, 0) << archive_error_string(a);
  }
  EXPECT_EQ(rc, ARCHIVE_EOF) << archive_error_string(a);
  archive_read_free(a);
  return members;
}

std::vector<std::string> Names(const std::vector<Member>& members) {
  std::vector<std::string> names;
  names.reserve(members.size());
  for (const Member& m : members) {
    names.push_back(m.name);
  }
  return names;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> DirEntries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool HaveTarZstd() {
  return std::system("command -v tar >/dev/null 2>&1 && command -v zstd >/dev/null 2>&1") == 0;
}

Artifact Content(std::string path, std::string content, bool redact = true) {
  Artifact a;
  a.path = std::move(path);
  a.content = std::move(content);
  a.redact = redact;
  return a;
}

Artifact File(std::string path, std::string source, std::uint64_t offset, std::uint64_t length,
              bool redact = true) {
  Artifact a;
  a.path = std::move(path);
  a.source_file = std::move(source);
  a.offset = offset;
  a.length = length;
  a.redact = redact;
  return a;
}

std::string Lines(std::size_t bytes, unsigned seed = 1) {
  std::mt19937 rng(seed);
  std::string text;
  while (text.size() < bytes) {
    text += "step " + std::to_string(rng() % 100000) + " loss " + std::to_string(rng() % 997) +
            " lr 3e-4 tokens/s " + std::to_string(rng()) + "\n";
  }
  text.resize(bytes);
  return text;
}

class BundleWriterTest : public ::testing::Test {
 protected:
  BundleRequest Request(std::vector<Artifact> artifacts) {
    BundleRequest request;
    request.dir = bundles_.string();
    request.file_name = "20261121T120000Z_host_rule.id_abc.tar.zst";
    request.artifacts = std::move(artifacts);
    request.make_manifest = [this](const BundleSummary& summary) {
      seen_ = summary;
      ++manifest_calls_;
      return "{\"artifacts\": " + std::to_string(summary.artifacts.size()) + "}\n";
    };
    return request;
  }

  TempDir temp_;
  fs::path bundles_ = temp_.path() / "bundles";
  BundleSummary seen_;
  int manifest_calls_ = 0;

  void SetUp() override { fs::create_directories(bundles_); }
};

TEST_F(BundleWriterTest, ManifestFirstThenEveryArtifactAtItsPath) {
  const std::string log = Lines(100000);
  const std::string source = temp_.Write("rank0.log", log);
  BundleRequest request =
      Request({Content("device/hl-smi-q.txt", "AIP 0: ok\n"),
               File("logs/rank0.log", source, 1000, 5000), Content("empty.txt", "")});
  const Result<BundleResult> result = WriteBundle(request);
  ASSERT_TRUE(result.ok()) << result.error().message;

  EXPECT_EQ(result->path, (bundles_ / request.file_name).string());
  EXPECT_EQ(result->bytes, fs::file_size(result->path));
  EXPECT_EQ(manifest_calls_, 1);
  const std::vector<Member> members = ReadBundle(result->path);
  ASSERT_EQ(Names(members), (std::vector<std::string>{"manifest.json", "device/hl-smi-q.txt",
                                                      "logs/rank0.log", "empty.txt"}));
  EXPECT_EQ(members[0].data, "{\"artifacts\": 3}\n");
  EXPECT_EQ(members[1].data, "AIP 0: ok\n");
  EXPECT_EQ(members[2].data, log.substr(1000, 5000));
  EXPECT_EQ(members[3].data, "");
  for (const Member& m : members) {
    EXPECT_EQ(m.perm, 0600u) << m.name;
  }
  // The manifest was made from the same numbers the summary returns.
  ASSERT_EQ(seen_.artifacts.size(), 3u);
  EXPECT_EQ(seen_.artifacts[1].bytes, 5000u);
  EXPECT_EQ(seen_.input_bytes, 10u + 5000u);
  EXPECT_EQ(result->summary.artifacts[1].bytes, 5000u);
  EXPECT_FALSE(result->summary.artifacts[1].truncated);
  EXPECT_EQ(result->summary.artifacts[1].problem, "");
  // Only the finished bundle, mode 0600, no partial file beside it.
  EXPECT_EQ(DirEntries(bundles_), std::vector<std::string>{request.file_name});
  EXPECT_EQ(fs::status(result->path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
}

TEST_F(BundleWriterTest, TheReportComesSecondMadeFromTheManifestAndReadsBackByName) {
  BundleRequest request = Request({Content("system/ps.txt", "PID\n")});
  std::string given;
  request.make_report = [&](const std::string& manifest) {
    given = manifest;
    return std::string("<!DOCTYPE html><p>verdict</p>\n");
  };
  const Result<BundleResult> result = WriteBundle(request);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(given, "{\"artifacts\": 1}\n");
  EXPECT_EQ(Names(ReadBundle(result->path)),
            (std::vector<std::string>{"manifest.json", "report.html", "system/ps.txt"}));
  const Result<std::string> page = ReadMember(result->path, "report.html");
  ASSERT_TRUE(page.ok()) << page.error().message;
  EXPECT_EQ(*page, "<!DOCTYPE html><p>verdict</p>\n");
  const Result<std::string> none = ReadMember(result->path, "nonesuch.txt");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find(": no nonesuch.txt in it"), std::string::npos);
}

TEST_F(BundleWriterTest, PlainTarListsAndExtractsIt) {
  if (!HaveTarZstd()) {
    GTEST_SKIP() << "tar or zstd is not installed";
  }
  const std::string log = Lines(3 << 20, 2);  // several chunks
  const std::string source = temp_.Write("big.log", log);
  BundleRequest request = Request({File("logs/big.log", source, 0, log.size()),
                                   Content("env/environment.txt", "PATH=/usr/bin\n")});
  request.threads = 2;
  const Result<BundleResult> result = WriteBundle(request);
  ASSERT_TRUE(result.ok()) << result.error().message;

  const fs::path listing = temp_.path() / "listing.txt";
  ASSERT_EQ(
      std::system(("tar --zstd -tf '" + result->path + "' > '" + listing.string() + "'").c_str()),
      0);
  EXPECT_EQ(Slurp(listing.string()), "manifest.json\nlogs/big.log\nenv/environment.txt\n");
  const fs::path out = temp_.path() / "out";
  fs::create_directories(out);
  ASSERT_EQ(
      std::system(("tar --zstd -xf '" + result->path + "' -C '" + out.string() + "'").c_str()), 0);
  EXPECT_EQ(Slurp((out / "logs/big.log").string()), log);
  EXPECT_EQ(Slurp((out / "env/environment.txt").string()), "PATH=/usr/bin\n");
  EXPECT_EQ(fs::status(out / "logs/big.log").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
}

TEST_F(BundleWriterTest, UnreadableSourcesAreRecordedAndTheBundleIsStillWritten) {
  const std::string target = temp_.Write("secret.txt", "not for the bundle\n");
  fs::create_symlink(target, temp_.path() / "link.log");
  const std::string fifo = temp_.PathOf("fifo.log");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string short_file = temp_.Write("short.log", "only this\n");
  BundleRequest request =
      Request({File("logs/gone.log", temp_.PathOf("gone.log"), 0, 100),
               File("logs/link.log", temp_.PathOf("link.log"), 0, 100),
               File("logs/fifo.log", fifo, 0, 100), File("logs/short.log", short_file, 5, 100)});
  const Result<BundleResult> result = WriteBundle(request);
  ASSERT_TRUE(result.ok()) << result.error().message;

  const auto& artifacts = result->summary.artifacts;
  ASSERT_EQ(artifacts.size(), 4u);
  EXPECT_NE(artifacts[0].problem.find("vanished"), std::string::npos) << artifacts[0].problem;
  EXPECT_NE(artifacts[1].problem.find("symlink"), std::string::npos) << artifacts[1].problem;
  EXPECT_NE(artifacts[2].problem.find("not a regular file"), std::string::npos);
  EXPECT_EQ(artifacts[3].bytes, 5u);
  EXPECT_TRUE(artifacts[3].truncated);
  EXPECT_NE(artifacts[3].problem.find("short"), std::string::npos) << artifacts[3].problem;
  EXPECT_EQ(seen_.artifacts[1].problem, artifacts[1].problem);  // the manifest knew

  const std::vector<Member> members = ReadBundle(result->path);
  ASSERT_EQ(Names(members), (std::vector<std::string>{"manifest.json", "logs/short.log"}));
  EXPECT_EQ(members[1].data, "this\n");
}

TEST_F(BundleWriterTest, UnsafeMemberPathsAreRefused) {
  BundleRequest request =
      Request({Content("../escape.txt", "x"), Content("/etc/passwd", "x"), Content("a//b", "x"),
               Content("manifest.json", "x"), Content("ok/fine.txt", "x")});
  const Result<BundleResult> result = WriteBundle(request);
  ASSERT_TRUE(result.ok()) << result.error().message;
  for (int i = 0; i < 4; ++i) {
    EXPECT_NE(result->summary.artifacts[i].problem.find("refused"), std::string::npos) << i;
  }
  EXPECT_EQ(Names(ReadBundle(result->path)),
            (std::vector<std::string>{"manifest.json", "ok/fine.txt"}));
}

// make_manifest runs between the two passes: the place to change a file behind the writer.
TEST_F(BundleWriterTest, AFileThatChangesBetweenPassesKeepsItsAnnouncedSize) {
  const std::string shrinks = temp_.Write("shrinks.log", std::string(100, 'a'));
  const std::string grows = temp_.Write("grows.log", std::string(50, 'b'));
  const std::string replaced = temp_.Write("replaced.log", std::string(30, 'c'));
  BundleRequest request = Request({File("shrinks.log", shrinks, 0, 100),
                                   File("grows.log", grows, 0, 1000, /*redact=*/false),
                                   File("replaced.log", replaced, 0, 30)});
  request.make_manifest = [&](const BundleSummary& summary) {
    fs::resize_file(shrinks, 40);
    std::ofstream(grows, std::ios::app) << std::string(50, 'B');
    temp_.Write("new.log", std::string(30, 'N'));
    fs::rename(temp_.PathOf("new.log"), replaced);
    return "sizes " + std::to_string(summary.artifacts[0].bytes) + "\n";
  };
  const Result<BundleResult> result = WriteBundle(request);
  ASSERT_TRUE(result.ok()) << result.error().message;

  const std::vector<Member> members = ReadBundle(result->path);
  ASSERT_EQ(members.size(), 4u);
  EXPECT_EQ(members[1].data, std::string(40, 'a') + std::string(60, '\n'));
  EXPECT_EQ(members[2].data, std::string(50, 'b'));   // cut to the announced 50 bytes
  EXPECT_EQ(members[3].data, std::string(30, '\n'));  // another file now: not read
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(result->summary.artifacts[i].problem.find("while bundling"), std::string::npos)
        << i << ": " << result->summary.artifacts[i].problem;
  }
}

std::shared_ptr<const collect::Redactor> RealRedactor() {
  Result<std::shared_ptr<const collect::Redactor>> redactor = collect::Redactor::Create();
  EXPECT_TRUE(redactor.ok()) << redactor.error().message;
  return redactor.ok() ? *redactor : nullptr;
}

std::string HfToken(int i) {
  return "hf_" + std::string(30, static_cast<char>('a' + i % 26)) + "Q" + std::to_string(i);
}

// Pass 2 copies a file pass 1 found clean without the redactor, but only while the file is as
// pass 1 saw it. With the clock a minute ahead every file here counts as settled, so only the
// comparison of size, mtime and ctime stands between a rewrite and a leak: one rewritten in
// place (same size) and one whose old mtime was put back (`touch -r`: only its ctime tells)
// are redacted again.
TEST_F(BundleWriterTest, ACleanFileRewrittenBetweenThePassesIsRedactedAgain) {
  const auto redactor = RealRedactor();
  ASSERT_NE(redactor, nullptr);
  const std::string clean = Lines(4000, 7);
  const std::string stays = temp_.Write("stays.log", clean);
  const std::string rewritten = temp_.Write("rewritten.log", clean);
  const std::string touched_back = temp_.Write("touched-back.log", clean);
  struct stat before {};
  ASSERT_EQ(::stat(touched_back.c_str(), &before), 0);
  BundleRequest request = Request({File("stays.log", stays, 0, clean.size()),
                                   File("rewritten.log", rewritten, 0, clean.size()),
                                   File("touched-back.log", touched_back, 0, clean.size())});
  request.redactor = redactor.get();
  request.now = std::time(nullptr) + 60;
  const std::string secret = "token " + HfToken(3) + "\n";
  request.make_manifest = [&](const BundleSummary&) {
    std::string text = clean;
    text.replace(0, secret.size(), secret);  // same size
    // ctime has the kernel's coarse clock: let it move on before the rewrite.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (const std::string& path : {rewritten, touched_back}) {
      std::ofstream(path, std::ios::in | std::ios::out | std::ios::binary) << text;
    }
    const struct timespec old_times[2] = {before.st_atim, before.st_mtim};
    ::utimensat(AT_FDCWD, touched_back.c_str(), old_times, 0);
    return std::string("{}\n");
  };
  const Result<BundleResult> result = WriteBundle(request);
  ASSERT_TRUE(result.ok()) << result.error().message;
  const std::vector<Member> members = ReadBundle(result->path);
  ASSERT_EQ(members.size(), 4u);
  EXPECT_EQ(members[1].data, clean);
  for (std::size_t i = 2; i < 4; ++i) {
    EXPECT_EQ(members[i].data.find(HfToken(3)), std::string::npos)
        << members[i].name << ": " << members[i].data.substr(0, 80);
    EXPECT_NE(members[i].data.find(collect::kRedacted), std::string::npos) << members[i].name;
  }
}

// A gzip, xz or bzip2 file holds nothing the redactor can read (every byte entropy-coded): it
// is bundled as it is, not scanned. zstd, lz4 and zip can keep text as it was (raw blocks,
// stored entries), and a file that merely starts with "BZh" is text: those are scanned.
TEST_F(BundleWriterTest, OnlyEntropyCodedFilesAreBundledUnscanned) {
  const auto redactor = RealRedactor();
  ASSERT_NE(redactor, nullptr);
  const std::string secret_line = "token " + HfToken(4) + "\n";
  const std::string gzip = std::string("\x1f\x8b\x08\x00", 4) + secret_line;
  const std::string bzip2 = "BZh91AY&SY" + secret_line;
  const std::string zstd = std::string("\x28\xb5\x2f\xfd", 4) + secret_line;
  const std::string zip = std::string("PK\x03\x04", 4) + secret_line;
  const std::string bzh_text = "BZh is how it starts: " + secret_line;
  BundleRequest request = Request({File("a.log.gz", temp_.Write("a.log.gz", gzip), 0, 1 << 20),
                                   File("b.bz2", temp_.Write("b.bz2", bzip2), 0, 1 << 20),
                                   File("c.zst", temp_.Write("c.zst", zstd), 0, 1 << 20),
                                   File("d.zip", temp_.Write("d.zip", zip), 0, 1 << 20),
                                   File("e.txt", temp_.Write("e.txt", bzh_text), 0, 1 << 20),
                                   File("f.log", temp_.Write("f.log", secret_line), 0, 1 << 20)});
  request.redactor = redactor.get();
  const Result<BundleResult> result = WriteBundle(request);
  ASSERT_TRUE(result.ok()) << result.error().message;
  const std::vector<Member> members = ReadBundle(result->path);
  ASSERT_EQ(members.size(), 7u);
  EXPECT_EQ(members[1].data, gzip);
  EXPECT_EQ(members[2].data, bzip2);
  for (std::size_t i = 3; i < 7; ++i) {
    EXPECT_EQ(members[i].data.find(HfToken(4)), std::string::npos) << members[i].name;
  }
  EXPECT_EQ(result->summary.redactions.total(), 4u);
}

TEST_F(BundleWriterTest, RedactsOnlyArtifactsMarkedForIt) {
  const auto redactor = RealRedactor();
  ASSERT_NE(redactor, nullptr);
  const std::string secret_line = "export HF_HOME=/data token " + HfToken(1) + "\n";
  const std::string source = temp_.Write("train.log", Lines(5000) + secret_line + Lines(5000));
  BundleRequest request =
      Request({Content("env.txt", secret_line), File("logs/train.log", source, 0, 1 << 20),
               Content("raw.bin", secret_line, /*redact=*/false)});
  request.redactor = redactor.get();
  const Result<BundleResult> result = WriteBundle(request);
  ASSERT_TRUE(result.ok()) << result.error().message;

  const std::vector<Member> members = ReadBundle(result->path);
  ASSERT_EQ(members.size(), 4u);
  EXPECT_EQ(members[1].data.find(HfToken(1)), std::string::npos) << members[1].data;
  EXPECT_NE(members[1].data.find(collect::kRedacted), std::string::npos);
  EXPECT_EQ(members[2].data.find(HfToken(1)), std::string::npos);
  EXPECT_EQ(members[2].data.size(),
            10000 + secret_line.size() - HfToken(1).size() + collect::kRedacted.size());
  EXPECT_EQ(members[3].data, secret_line);
  // Counted once (the first pass), and the manifest saw the counts.
  EXPECT_EQ(result->summary.redactions.by_rule.at("pattern:hf_token"), 2u);
  EXPECT_EQ(seen_.redactions.total(), result->summary.redactions.total());
  EXPECT_EQ(seen_.input_bytes, 3 * secret_line.size() + 10000);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(result->summary.artifacts[i].bytes, members[i + 1].data.size()) << i;
  }
}

// Files are redacted in chunks of a few MiB. Secrets sit across every MiB boundary (whatever the
// chunk size, some are at a chunk's edge): none may survive, each is counted once, and private
// key blocks, which span lines, are not split.
TEST_F(BundleWriterTest, SecretsAcrossChunkEdgesAreRedacted) {
  const auto redactor = RealRedactor();
  ASSERT_NE(redactor, nullptr);
  constexpr int kMiBs = 13;
  std::string tokens;
  std::string keys;
  for (int mib = 1; mib <= kMiBs; ++mib) {
    const std::size_t edge = static_cast<std::size_t>(mib) << 20;
    tokens += Lines(edge - 20 - tokens.size(), mib);
    tokens += "\ntoken=" + HfToken(mib) + " ok\n";
    keys += Lines(edge - 900 - keys.size(), mib);
    keys += "\n-----BEGIN PRIVATE KEY-----\n";
    for (int line = 0; line < 30; ++line) {
      keys += "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC" + std::to_string(line) + "\n";
    }
    keys += "-----END PRIVATE KEY-----\n";
  }
  const std::string token_file = temp_.Write("tokens.log", tokens);
  const std::string key_file = temp_.Write("keys.log", keys);
  BundleRequest request = Request({File("tokens.log", token_file, 0, tokens.size()),
                                   File("keys.log", key_file, 0, keys.size()),
                                   File("tail.log", token_file, 7, tokens.size() - 7)});
  request.redactor = redactor.get();
  const Result<BundleResult> result = WriteBundle(request);
  ASSERT_TRUE(result.ok()) << result.error().message;

  const std::vector<Member> members = ReadBundle(result->path);
  ASSERT_EQ(members.size(), 4u);
  EXPECT_EQ(members[1].data.find("hf_"), std::string::npos);
  EXPECT_EQ(members[2].data.find("MIIEv"), std::string::npos);
  EXPECT_EQ(members[3].data.find("hf_"), std::string::npos);
  EXPECT_EQ(result->summary.redactions.by_rule.at("pattern:hf_token"), 2u * kMiBs);
  EXPECT_EQ(result->summary.redactions.by_rule.at("pattern:private_key"), 1u * kMiBs);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(result->summary.artifacts[i].problem, "") << i;
  }
}

TEST_F(BundleWriterTest, DefaultManifestIsJsonAboutEveryArtifact) {
  BundleRequest request = Request({Content("a.txt", "abc"), Content("../bad", "x")});
  request.make_manifest = nullptr;
  const Result<BundleResult> result = WriteBundle(request);
  ASSERT_TRUE(result.ok()) << result.error().message;
  const std::string manifest = ReadBundle(result->path).at(0).data;
  EXPECT_NE(manifest.find("\"path\": \"a.txt\""), std::string::npos) << manifest;
  EXPECT_NE(manifest.find("refused"), std::string::npos) << manifest;
}

TEST_F(BundleWriterTest, SingleThreadedAndHigherLevelsWriteTheSameMembers) {
  const std::string log = Lines(1 << 20, 3);
  const std::string source = temp_.Write("a.log", log);
  for (const auto& [level, threads] : {std::pair{1, 1}, std::pair{3, 0}, std::pair{19, 2}}) {
    BundleRequest request = Request({File("a.log", source, 0, log.size())});
    request.file_name = "bundle_" + std::to_string(level) + ".tar.zst";
    request.level = level;
    request.threads = threads;
    const Result<BundleResult> result = WriteBundle(request);
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_EQ(ReadBundle(result->path).at(1).data, log) << level;
  }
}

TEST_F(BundleWriterTest, BadLevelOrNameIsAnErrorAndLeavesNothing) {
  BundleRequest request = Request({Content("a.txt", "abc")});
  request.level = 99;
  Result<BundleResult> result = WriteBundle(request);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message.find("level 99"), std::string::npos) << result.error().message;
  request.level = 3;
  request.file_name = "../x.tar.zst";
  EXPECT_FALSE(WriteBundle(request).ok());
  EXPECT_TRUE(DirEntries(bundles_).empty());
}

TEST_F(BundleWriterTest, MissingDirectoryIsAnErrorNamingTheCause) {
  BundleRequest request = Request({Content("a.txt", "abc")});
  request.dir = (temp_.path() / "nope").string();
  const Result<BundleResult> result = WriteBundle(request);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message.find("No such file or directory"), std::string::npos)
      << result.error().message;
}

// A real full disk: a 1 MiB tmpfs (needs root with CAP_SYS_ADMIN, as in CI containers).
TEST_F(BundleWriterTest, FullDiskRemovesThePartialFileAndSaysWhy) {
  const fs::path mount_point = temp_.path() / "tiny";
  fs::create_directories(mount_point);
  if (::mount("tmpfs", mount_point.c_str(), "tmpfs", 0, "size=1m") != 0) {
    GTEST_SKIP() << "cannot mount a 1 MiB tmpfs here: " << std::strerror(errno);
  }
  std::mt19937_64 rng(7);
  std::string noise(3 << 20, '\0');  // incompressible, so the bundle outgrows the disk
  for (char& c : noise) {
    c = static_cast<char>(rng());
  }
  const std::string source = temp_.Write("noise.bin", noise);
  BundleRequest request = Request({File("noise.bin", source, 0, noise.size(), false)});
  request.dir = mount_point.string();
  const Result<BundleResult> result = WriteBundle(request);
  const std::vector<std::string> left = DirEntries(mount_point);
  ::umount(mount_point.c_str());
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message.find("No space left on device"), std::string::npos)
      << result.error().message;
  EXPECT_TRUE(left.empty()) << left.front();
}

TEST_F(BundleWriterTest, RemovePartialBundlesRemovesOnlyPartials) {
  for (const char* name :
       {".a.tar.zst.partial", ".b.tar.zst.partial", "c.tar.zst", ".hidden", "d.partial"}) {
    temp_.Write(("bundles/" + std::string(name)), "x");
  }
  EXPECT_EQ(RemovePartialBundles(bundles_.string()), 2u);
  EXPECT_EQ(DirEntries(bundles_), (std::vector<std::string>{".hidden", "c.tar.zst", "d.partial"}));
  EXPECT_EQ(RemovePartialBundles((temp_.path() / "nope").string()), 0u);
}

}  // namespace
}  // namespace trainwatch::bundle
