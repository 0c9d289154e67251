#include "cluster/shared_listing.h"

#include <limits>

namespace trainwatch::cluster {

Listing ListEntries(const std::filesystem::path& dir, std::size_t max_entries) {
  Listing listing;
  std::filesystem::directory_iterator it(dir, listing.error);
  for (const std::filesystem::directory_iterator end; !listing.error && it != end;
       it.increment(listing.error)) {
    if (listing.entries.size() == max_entries) {
      listing.cut = true;  // one more stands here: it and the rest stay unread
      break;
    }
    listing.entries.push_back(*it);
  }
  return listing;
}

std::vector<std::filesystem::directory_entry> ListEntries(const std::filesystem::path& dir,
                                                          std::error_code& error) {
  Listing listing = ListEntries(dir, std::numeric_limits<std::size_t>::max());
  error = listing.error;
  return std::move(listing.entries);
}

}  // namespace trainwatch::cluster
