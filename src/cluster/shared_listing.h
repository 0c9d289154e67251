// Listing a directory on a network file system without exceptions: std::filesystem's
// iterator throws from its ++ (ESTALE, EIO) even when built with an error_code, and a throw on
// the thread pool ends the daemon. Any thread.
#pragma once

#include <cstddef>
#include <filesystem>
#include <system_error>
#include <vector>

namespace trainwatch::cluster {

struct Listing {
  std::vector<std::filesystem::directory_entry> entries;
  bool cut = false;       // the maximum was reached with more entries to come, left unread
  std::error_code error;  // what ended the listing early
};

// At most `max_entries` entries of `dir`: the listing stops there, so that a directory a
// hostile peer floods with names is never read into memory whole.
Listing ListEntries(const std::filesystem::path& dir, std::size_t max_entries);

// The entries of `dir`; an error ends the listing early and is left in `error`.
std::vector<std::filesystem::directory_entry> ListEntries(const std::filesystem::path& dir,
                                                          std::error_code& error);

}  // namespace trainwatch::cluster
