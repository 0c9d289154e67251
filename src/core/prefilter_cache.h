// A directory of compiled prefilter databases (core/multi_regex.h), keyed by everything that
// went into the compile (the Hyperscan version, every expression, id and flag). Loading one
// instead of compiling keeps the daemon from ever touching Hyperscan's compiler: its start is
// faster and megabytes of compiler code and scratch never become part of its memory. Any
// thread (files are written under a temporary name and renamed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/hyperscan_handles.h"

namespace trainwatch {

// What a database is compiled from, in full (`source`: the Hyperscan version, every
// expression, flag and id), and its hash, which names the file.
struct DatabaseKey {
  std::uint64_t hash = 0;
  std::string source;
};
DatabaseKey DatabaseKeyOf(const std::vector<const char*>& expressions,
                          const std::vector<unsigned>& flags, const std::vector<unsigned>& ids);
// Null when the cache has no usable database for `key` (missing, from another platform or
// version, damaged), and when the file is not to be trusted: a database is taken only from a
// regular file (never through a link) of this process's user that no one else may write, and
// only when the source stored in it is `key.source` byte for byte: the name is never enough (a
// file planted under the right name once blinded detection).
HsDatabase LoadCachedDatabase(const std::string& dir, const DatabaseKey& key);
// Best effort: a cache that cannot be written only costs the next start a compile. Keeps the
// kMaxCached most recently used databases. Written 0600, the source before the database.
void StoreCachedDatabase(const std::string& dir, const DatabaseKey& key, const hs_database* db);
// The same for a database already serialized (a compile helper's answer).
void StoreCachedBytes(const std::string& dir, const DatabaseKey& key, std::string_view serialized);

inline constexpr std::size_t kMaxCached = 16;

}  // namespace trainwatch
