// Listing a directory on a network file system without exceptions: std::filesystem's
// iterator throws from its ++ (ESTALE, EIO) even when built with an error_code, and a throw on
// the thread pool ends the daemon. Any thread.
#pragma once

#include <filesystem>
#include <system_error>
#include <vector>

namespace trainwatch::cluster {

// The entries of `dir`; an error ends the listing early and is left in `error`.
std::vector<std::filesystem::directory_entry> ListEntries(const std::filesystem::path& dir,
                                                          std::error_code& error);

}  // namespace trainwatch::cluster
