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

std::uint64_t DatabaseKey(const std::vector<const char*>& expressions,
                          const std::vector<unsigned>& flags, const std::vector<unsigned>& ids);
// Null when the cache has no usable database for `key` (missing, from another platform or
// version, damaged).
HsDatabase LoadCachedDatabase(const std::string& dir, std::uint64_t key);
// Best effort: a cache that cannot be written only costs the next start a compile. Keeps the
// kMaxCached most recently used databases.
void StoreCachedDatabase(const std::string& dir, std::uint64_t key, const hs_database* db);
// The same for a database already serialized (a compile helper's answer).
void StoreCachedBytes(const std::string& dir, std::uint64_t key, std::string_view serialized);

inline constexpr std::size_t kMaxCached = 16;

}  // namespace trainwatch
