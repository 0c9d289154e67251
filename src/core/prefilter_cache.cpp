#include "core/prefilter_cache.h"

#include <hs/hs.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include "core/atomic_file.h"
#include "core/trusted_path.h"
#include "core/untrusted_file.h"

namespace trainwatch {
namespace {

namespace fs = std::filesystem;

// A cached file: this line, the source's length and a newline, the source, the database.
constexpr std::string_view kFormat = "trainwatch prefilter 2\n";
// Far more than any rule set's database (1,000 operator rules: a few MiB).
constexpr std::size_t kMaxCachedBytes = 256 << 20;

void Mix(std::uint64_t& hash, std::string_view bytes) {
  for (unsigned char c : bytes) {
    hash = (hash ^ c) * 1099511628211ull;
  }
  hash = (hash ^ 0xff) * 1099511628211ull;  // a separator, so "ab","c" differs from "a","bc"
}

std::string PathOf(const std::string& dir, std::uint64_t key) {
  char name[40];
  std::snprintf(name, sizeof name, "hs-%016llx.db", static_cast<unsigned long long>(key));
  return (fs::path(dir) / name).string();
}

void Prune(const std::string& dir) {
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> cached;
  const auto stale = fs::file_time_type::clock::now() - std::chrono::minutes(10);
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("hs-") && name.ends_with(".db")) {
      cached.emplace_back(entry.last_write_time(ec), entry.path());
    } else if (name.starts_with("hs-") && name.ends_with(".tmp") &&
               entry.last_write_time(ec) < stale) {
      fs::remove(entry.path(), ec);  // a writer killed mid-write
    }
  }
  if (cached.size() <= kMaxCached) {
    return;
  }
  std::sort(cached.begin(), cached.end(), std::greater<>());
  for (std::size_t i = kMaxCached; i < cached.size(); ++i) {
    fs::remove(cached[i].second, ec);
  }
}

}  // namespace

DatabaseKey DatabaseKeyOf(const std::vector<const char*>& expressions,
                          const std::vector<unsigned>& flags, const std::vector<unsigned>& ids) {
  DatabaseKey key;
  // A database is only valid for the library that wrote it.
  key.source = std::string("hyperscan ") + hs_version() + "\n";
  for (std::size_t i = 0; i < expressions.size(); ++i) {
    key.source += std::to_string(ids[i]) + " " + std::to_string(flags[i]) + " " +
                  std::to_string(std::strlen(expressions[i])) + " " + expressions[i] + "\n";
  }
  key.hash = 14695981039346656037ull;
  Mix(key.hash, key.source);
  return key;
}

HsDatabase LoadCachedDatabase(const std::string& dir, const DatabaseKey& key) {
  if (dir.empty()) {
    return nullptr;
  }
  const std::string path = PathOf(dir, key.hash);
  UntrustedPath how;
  how.owner = ::geteuid();
  Result<UntrustedText> file = ReadUntrusted(path, how, kMaxCachedBytes);
  if (!file || file->truncated || OthersMayWrite(file->info.st_mode, file->info.st_gid)) {
    return nullptr;
  }
  const std::string& data = file->text;
  const std::string header = std::string(kFormat) + std::to_string(key.source.size()) + "\n";
  if (!data.starts_with(header) ||
      data.compare(header.size(), key.source.size(), key.source) != 0) {
    return nullptr;  // another format, or compiled from other rules: compiled again
  }
  const std::size_t at = header.size() + key.source.size();
  hs_database_t* db = nullptr;
  // Hyperscan checks the platform and version recorded in the bytes, and refuses others.
  if (hs_deserialize_database(data.data() + at, data.size() - at, &db) != HS_SUCCESS) {
    std::error_code ec;
    fs::remove(path, ec);
    return nullptr;
  }
  std::error_code ec;
  fs::last_write_time(path, fs::file_time_type::clock::now(), ec);  // recently used
  return HsDatabase(db);
}

void StoreCachedDatabase(const std::string& dir, const DatabaseKey& key, const hs_database* db) {
  if (dir.empty()) {
    return;
  }
  char* bytes = nullptr;
  std::size_t length = 0;
  if (hs_serialize_database(db, &bytes, &length) != HS_SUCCESS) {
    return;
  }
  const std::unique_ptr<char, decltype(&std::free)> owned(bytes, &std::free);
  StoreCachedBytes(dir, key, std::string_view(bytes, length));
}

void StoreCachedBytes(const std::string& dir, const DatabaseKey& key, std::string_view serialized) {
  if (dir.empty()) {
    return;
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  // A cache: a failed write only means compiling again at the next start.
  // Concurrent `scan`s share the cache: each writer its own temporary.
  // Concurrent writers may share a pid (containers, each its pid 1, sharing a mounted cache):
  // a random part too.
  static const unsigned process_tag = std::random_device{}();
  static std::atomic<unsigned> writes{0};
  std::string suffix(".");  // appended piece by piece: "." + ... trips GCC 12's -Wrestrict
  suffix += std::to_string(::getpid());
  suffix += '-';
  suffix += std::to_string(process_tag);
  suffix += '-';
  suffix += std::to_string(writes.fetch_add(1));
  suffix += ".tmp";
  std::string file = std::string(kFormat) + std::to_string(key.source.size()) + "\n";
  file += key.source;
  file += serialized;
  (void)WriteFileAtomically(PathOf(dir, key.hash), file, 0600, suffix);
  Prune(dir);
}

}  // namespace trainwatch
