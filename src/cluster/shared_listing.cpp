#include "cluster/shared_listing.h"

namespace trainwatch::cluster {

std::vector<std::filesystem::directory_entry> ListEntries(const std::filesystem::path& dir,
                                                          std::error_code& error) {
  std::vector<std::filesystem::directory_entry> entries;
  std::filesystem::directory_iterator it(dir, error);
  for (const std::filesystem::directory_iterator end; !error && it != end; it.increment(error)) {
    entries.push_back(*it);
  }
  return entries;
}

}  // namespace trainwatch::cluster
